"""The hand-kept table of lazily registered magics (nighthawk_ipython/_table.py) matches the class."""

from __future__ import annotations

import pprint
from typing import Any

from nighthawk_ipython._magics import NighthawkMagics
from nighthawk_ipython._table import LAZY_MAGICS, MAGICS_SPEC


def test_lazy_magic_table_matches_the_registered_magics(ip: Any) -> None:
    magics = NighthawkMagics(shell=ip).magics
    actual = {kind: {name: MAGICS_SPEC for name in sorted(magics[kind])} for kind in ("line", "cell") if magics[kind]}
    assert LAZY_MAGICS == actual, "update nighthawk_ipython/_table.py to:\nLAZY_MAGICS = " + pprint.pformat(actual)


def test_spec_names_the_magics_class() -> None:
    module, _, name = MAGICS_SPEC.partition(":")
    assert (module, name) == (NighthawkMagics.__module__, NighthawkMagics.__name__)
