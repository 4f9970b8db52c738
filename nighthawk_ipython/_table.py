"""The magics this extension declares lazily, by kind and name.

`load_ipython_extension` hands this table to `MagicsManager.register_lazy`, so `%lsmagic` and completion
list the magics at once while `_magics` (and everything it imports) waits for the first use. The table is
kept by hand; `tests/kernel/test_magic_table.py` fails, printing the correct table, when it drifts from the
magics `NighthawkMagics` really defines.
"""

from __future__ import annotations

__all__ = ["LAZY_MAGICS", "MAGICS_SPEC"]

MAGICS_SPEC = "nighthawk_ipython._magics:NighthawkMagics"
"""Where the magics class lives, in the `module:Class` form `register_lazy` imports directly."""

LAZY_MAGICS: dict[str, dict[str, str]] = {
    "line": {"nighthawk": MAGICS_SPEC},
    "cell": {"natural": MAGICS_SPEC},
}
"""Magic kind -> magic name -> provider spec."""
