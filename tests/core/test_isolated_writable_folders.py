"""The `writable` folders of `isolated()` are the folders it was given, at every step: a symbolic link an earlier
step put on the way (in a folder it could write) does not aim a later step's walls at another folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import nighthawk as nh
from isolated_steps import look
from scripting import finish, model_code, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")


def test_a_link_an_earlier_step_made_does_not_move_a_later_steps_walls(tmp_path: Path) -> None:
    outer, target = tmp_path / "outer", tmp_path / "target"
    (outer / "inner").mkdir(parents=True)
    target.mkdir()
    (target / "victim.txt").write_text("original")
    walls = nh.oversight.isolated(writable=[outer / "inner", outer])
    swap = f"(__import__('os').rename({str(outer / 'inner')!r}, {str(outer / 'old')!r}), __import__('os').symlink({str(target)!r}, {str(outer / 'inner')!r}))"
    first, _ = scripted_executor(model_code("nh_eval", swap), [finish("return", return_expression="1")])
    with nh.run(first), nh.scope(oversight=walls):
        look()  # `outer` is writable: the swap itself is allowed
    assert (outer / "inner").is_symlink()
    write = f"open({str(outer / 'inner' / 'victim.txt')!r}, 'w').write('overwritten')"
    second, _ = scripted_executor(model_code("nh_eval", write), [finish("return", return_expression="1")])
    with nh.run(second), nh.scope(oversight=walls), pytest.raises(nh.errors.IsolationUnavailableError, match="symbolic link"):
        look()
    assert (target / "victim.txt").read_text() == "original"


def test_a_writable_folder_reached_through_a_link_when_named_is_still_writable(tmp_path: Path) -> None:
    # `isolated()` resolves the links of the path it is given, once: the folder they led to is the one walled in.
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    executor, _ = scripted_executor(
        model_code("nh_eval", f"open({str(tmp_path / 'link' / 'out.txt')!r}, 'w').write('made')"), [finish("return", return_expression="1")]
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(writable=[tmp_path / "link"])):
        look()
    assert (real / "out.txt").read_text() == "made"
