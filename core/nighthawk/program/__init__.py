"""Stages 1 and 2 of the road: a Natural block read into a `Program` (`block.py`), the `Frame` it runs in
(`frame.py`), and for a natural function the source its blocks come from (`_source.py`) and the rewrite that
turns each block statement into a runtime call (`_rewrite.py`). Nothing here talks to a model."""
