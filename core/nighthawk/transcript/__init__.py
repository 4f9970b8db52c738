"""A step retold for a person: the Python it ran (`_as_python.py`) and where a natural function's locals can
be taken from in a notebook (`_local_sources.py`), characters a reader would not see as they are
(`_unseen.py`), and names that read as other names (`_lookalikes.py`)."""
