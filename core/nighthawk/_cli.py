"""The `nighthawk` console script: one word for the command, its own arguments after it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

_USAGE = """usage: nighthawk COMMAND [ARGS]

commands:
  eval    run the suite of shared-state programs against a model (`nighthawk eval --help`)"""


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `nighthawk COMMAND ...`; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["eval"]:
        from .eval.cli import main as eval_main  # only the command asked for is imported

        return eval_main(args[1:])
    if args[:1] in (["-h"], ["--help"]):
        print(_USAGE)
        return 0
    shown = f"unknown command {args[0]!r}" if args else "no command given"
    print(f"{_USAGE}\n\nnighthawk: error: {shown}; use `nighthawk eval`", file=sys.stderr)
    return 2
