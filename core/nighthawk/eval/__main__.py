"""`python -m nighthawk.eval`: the same as `nighthawk eval`."""

from .cli import main

raise SystemExit(main(prog="python -m nighthawk.eval"))
