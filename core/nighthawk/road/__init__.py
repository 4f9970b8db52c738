"""The road a block takes: the scopes it runs in (`runtime.py`: the executor in force, run and scope ids,
prompt suffixes, the usage meter), the runner of stages 3 to 5 (`runner.py`), the function door
(`decorator.py`), and the factory a front end registers to show a map's progress (`_map_renderers.py`).
The runner finds the executor through the runtime and never imports `nighthawk.model`."""
