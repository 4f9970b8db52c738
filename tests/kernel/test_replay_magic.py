"""`%nighthawk replay PATH --record` checks that the store can be written before any request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from kernel_scripts import assign, outcome, scripted


def test_record_to_an_unwritable_store_fails_before_any_request(shell: Any, use_model: Any) -> None:
    import nighthawk_ipython

    model = scripted([assign("doubled", "n * 2"), outcome("pass")])
    use_model(model)
    with pytest.raises(UsageError, match=r"%nighthawk replay: cannot record to the replay store '/proc/nighthawk/x\.yaml'"):
        shell.run_line_magic("nighthawk", "replay /proc/nighthawk/x.yaml --record")
    # The magic failed as a whole: the kernel's model is still the one in force before it.
    assert nighthawk_ipython.configure(shell=shell).model_object is model


def test_auto_into_a_directory_fails_before_any_request(shell: Any, use_model: Any, tmp_path: Path) -> None:
    use_model(scripted())
    with pytest.raises(UsageError, match=r"cannot record to the replay store '.*': it is a directory"):
        shell.run_line_magic("nighthawk", f"replay {tmp_path} --auto")
