"""The road a block takes: the scopes it runs in (`runtime.py`: the executor in force, run and scope ids,
prompt suffixes, the usage meter), the runner of stages 3 to 5 (`runner.py`), the function door
(`decorator.py`), and what a front end gets ready on first use (`_first_use.py`, `_map_renderers.py`).
The runner finds the executor through the runtime and never imports `nighthawk.model`."""
