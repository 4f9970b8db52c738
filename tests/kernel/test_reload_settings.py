"""Settings stick: `%reload_ext`, `%unload_ext` followed by the startup file's autoload, and `%unload_ext` +
`%load_ext` keep the model, display and limits, so nothing moves a kernel from a scripted model or a replay
store to a live provider. `%nighthawk status` says where requests go; `-m` and `%nighthawk model` refuse a
value that is not a model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

STARTUP = Path(__file__).resolve().parents[2] / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"

SETUP = BASE_SETUP + """
%nighthawk display text
%nighthawk limits value_max_tokens=77
"""

EXPECTED_STATUS = ("model:   directed (FunctionModel directed)", "display: text", "limits:  value_max_tokens=77")


@pytest.fixture
def live() -> Iterator[Live]:
    # OPENAI_API_KEY is set: falling back to the default model would be able to reach a live provider.
    with live_kernel(SETUP, env={"OPENAI_API_KEY": "sk-not-a-real-key"}) as kernel:
        yield kernel


def assert_settings_kept(live: Live) -> None:
    status = live.ok("%nighthawk status").printed
    for line in EXPECTED_STATUS:
        assert line in status
    assert live.ok("%%natural\nRETURN 'still scripted'").result == "'still scripted'"


def test_settings_survive_reload_ext(live: Live) -> None:
    live.ok("%reload_ext nighthawk")
    assert_settings_kept(live)


def test_settings_survive_unload_ext_and_the_startup_autoload(live: Live) -> None:
    live.ok("%unload_ext nighthawk")
    live.ok(f"exec(open({str(STARTUP)!r}).read())")  # what a new session's startup does
    assert_settings_kept(live)  # the first use of a magic loads the extension again


def test_settings_survive_unload_ext_and_load_ext(live: Live) -> None:
    live.ok("%unload_ext nighthawk\n%load_ext nighthawk")
    assert_settings_kept(live)


def test_status_shows_a_scripted_model_sends_nothing(live: Live) -> None:
    status = live.ok("%nighthawk status").printed
    assert "provider: function" in status
    assert "base URL: none (scripted in this kernel: nothing is sent anywhere)" in status
    assert "replay:  off" in status


def test_status_shows_the_provider_base_url_of_a_model_string(live: Live) -> None:
    live.ok("import os\nos.environ['OPENAI_BASE_URL'] = 'http://127.0.0.1:9/v1'\n%nighthawk model openai-chat:gpt-test")
    status = live.ok("%nighthawk status").printed
    assert "provider: openai-chat" in status
    assert "base URL: http://127.0.0.1:9/v1" in status


def test_status_shows_the_replay_mode_and_store(live: Live, tmp_path: Path) -> None:
    store = tmp_path / "cells.replay.yaml"
    live.ok(f"%nighthawk replay {store}")
    status = live.ok("%nighthawk status").printed
    assert "provider: none (every answer comes from the replay store; nothing is sent)" in status
    assert f"replay:  replay ({store})" in status


# --- refusing what is not a model (in-process shell) ------------------------------------------------------


def test_nighthawk_model_refuses_a_list_variable(shell: Any) -> None:
    shell.user_ns["models"] = ["openai-responses:gpt-5.4-nano"]
    with pytest.raises(UsageError, match=r"%nighthawk model: variable 'models' holds a value of type list, which is not a model; give a `provider:model` string, a pydantic-ai Model"):
        shell.run_line_magic("nighthawk", "model models")


def test_cell_model_option_refuses_a_number_variable(shell: Any) -> None:
    shell.user_ns["choice"] = 123
    with pytest.raises(UsageError, match=r"%%natural --model: variable 'choice' holds a value of type int, which is not a model"):
        shell.run_cell_magic("natural", "-m choice", "Do nothing.")
