"""Under `isolated(file_mb=...)`, no file the child writes grows past the bound: not one in a `writable=` folder,
not the file its printing fills, not one a program it starts writes. A runaway loop would otherwise fill the
disk, or the memory behind a `/tmp` on tmpfs, which no memory limit of the child counts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import nighthawk as nh
from isolated_steps import look, run_isolated
from scripting import finish, model_code, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

MIB = 2**20


def test_a_file_in_a_writable_folder_stops_growing_at_the_bound(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    read = run_isolated(
        "nh_eval", f"[open({str(target)!r}, 'ab').write(bytes(2**20)) for _ in range(3)]", writable=[tmp_path], file_mb=2
    )
    assert "File too large" in read
    assert target.stat().st_size == 2 * MIB


def test_a_program_the_child_starts_cannot_write_past_the_bound(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    command = f"head -c {3 * MIB} /dev/zero > {target}"
    run_isolated("nh_eval", f"__import__('subprocess').run({command!r}, shell=True).returncode", writable=[tmp_path], file_mb=2)
    assert target.stat().st_size == 2 * MIB


def test_a_runaway_print_loop_stops_at_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    # Each line is written through to the child's output file, which only a finished call empties.
    read = run_isolated("nh_eval", "[print('x' * 1023) for _ in range(4 * 1024)]", file_mb=2)
    assert "File too large" in read
    printed = capsys.readouterr().out
    assert "more bytes printed in the isolated child, not shown" in printed  # its first MiB is shown, the rest counted
    assert f"[{MIB:,} more bytes" in printed  # the file held 2 MiB: the rest was never written


def test_a_file_within_the_bound_is_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "small.bin"
    executor, _ = scripted_executor(
        model_code("nh_eval", f"open({str(target)!r}, 'wb').write(bytes(2**20))"), [finish("return", return_expression="1")]
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(writable=[tmp_path], file_mb=2)):
        look()
    assert target.stat().st_size == MIB


@pytest.mark.parametrize("bound", [0, -1, 1.5, "2", True, 2**41])
def test_file_mb_must_be_a_positive_integer(bound: object) -> None:
    with pytest.raises(ValueError, match="`file_mb` must be a positive integer"):
        nh.oversight.isolated(file_mb=bound)  # type: ignore[arg-type]


@pytest.mark.parametrize(("bound", "written"), [(1024, False), (None, True)], ids=["default", "none"])
def test_the_bound_is_how_far_into_a_file_and_none_sets_none(tmp_path: Path, bound: int | None, written: bool) -> None:
    # A byte written at 1.5 GiB (the file stays sparse): past the default bound, within no bound.
    target = tmp_path / "sparse.bin"
    expression = f"(f := open({str(target)!r}, 'wb'), f.seek(3 * 2**29), f.write(b'x'), f.close())"
    read = run_isolated("nh_eval", expression, writable=[tmp_path], file_mb=bound)
    assert ("File too large" not in read) is written
    assert (target.stat().st_size == 3 * 2**29 + 1) is written


def test_the_default_bound_is_a_gibibyte() -> None:
    assert nh.oversight.isolated().isolation.file_mb == 1024  # type: ignore[union-attr]
