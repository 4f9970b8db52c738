"""Under `isolated()` the model's code reads every file but devices: not another terminal of the user (where a
password is typed), not a raw disk or the kernel's log. The devices a program reads for bytes stay readable,
and every folder can still be listed."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from isolated_steps import run_isolated

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A terminal with a line typed into it and not yet read: its controlling end, and the path of the other."""
    controlling, other = os.openpty()
    os.write(controlling, b"hunter2\n")
    try:
        yield other, os.ttyname(other)
    finally:
        os.close(controlling)
        os.close(other)


def _still_waiting(other: int) -> bytes:
    os.set_blocking(other, False)
    try:
        return os.read(other, 100)
    except BlockingIOError:
        return b""


@pytest.mark.parametrize(
    "spelling",
    [
        "open({path!r}, 'rb', buffering=0).read(100)",
        "__import__('os').read(__import__('os').open({path!r}, __import__('os').O_RDONLY | __import__('os').O_NONBLOCK), 100)",
        "open('/proc/self/root' + {path!r}, 'rb', buffering=0).read(100)",
        "__import__('subprocess').run(['head', '-c', '8', {path!r}], capture_output=True, timeout=5)",
    ],
    ids=["open", "os.open", "through /proc/self/root", "a program it starts"],
)
def test_another_terminal_of_the_user_cannot_be_read(terminal: tuple[int, str], spelling: str) -> None:
    other, path = terminal
    seen = run_isolated("nh_eval", spelling.format(path=path))
    assert "hunter2" not in seen
    assert "Permission denied" in seen or "PermissionError" in seen
    assert _still_waiting(other) == b"hunter2\n"  # the line is still the terminal's to read


def test_a_terminal_behind_a_link_in_a_readable_folder_cannot_be_read(terminal: tuple[int, str], tmp_path: Path) -> None:
    other, path = terminal
    (tmp_path / "notes.txt").symlink_to(path)
    seen = run_isolated("nh_eval", f"open({str(tmp_path / 'notes.txt')!r}, 'rb', buffering=0).read(100)")
    assert "PermissionError" in seen
    assert _still_waiting(other) == b"hunter2\n"


@pytest.mark.parametrize("device", ["/dev/kmsg", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/vcs"])
def test_a_device_the_kernel_may_read_is_not_readable(device: str) -> None:
    try:
        os.close(os.open(device, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pytest.skip(f"{device} cannot be read here even outside the walls")
    seen = run_isolated("nh_eval", f"open({device!r}, 'rb', buffering=0).read(16)")
    assert "PermissionError" in seen


def test_the_devices_a_program_reads_for_bytes_stay_readable() -> None:
    expression = "[len(open(f'/dev/{name}', 'rb').read(8)) for name in ('urandom', 'random', 'zero', 'full', 'null')]"
    assert "[8,8,8,8,0]" in run_isolated("nh_eval", expression)


def test_writing_to_dev_null_still_works() -> None:
    assert "5" in run_isolated("nh_eval", "open('/dev/null', 'w').write('quiet')")


def test_every_folder_can_still_be_listed() -> None:
    expression = "('dev' in __import__('os').listdir('/'), 'null' in __import__('os').listdir('/dev'))"
    assert "[true,true]" in run_isolated("nh_eval", expression)


def test_files_outside_the_devices_stay_readable(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    seen = run_isolated("nh_eval", f"(open({str(tmp_path / 'data.csv')!r}).read(), open({sys.executable!r}, 'rb').read(4))")
    assert "a,b" in seen
    assert "ELF" in seen


def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node or a mount needs root")


def test_a_device_node_outside_dev_cannot_be_read(tmp_path: Path) -> None:
    # As a root-unpacked system tree (a chroot, a container's root) holds them: `dev/tty1` of its own is the console's.
    _as_root()
    node = tmp_path / "rootfs-dev-zero"
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # the same device as /dev/zero
    with open(node, "rb") as device:
        assert device.read(4) == bytes(4)  # readable outside the walls
    seen = run_isolated("nh_eval", f"open({str(node)!r}, 'rb').read(4)")
    assert "PermissionError" in seen


def test_the_users_terminals_mounted_outside_dev_cannot_be_read(terminal: tuple[int, str], tmp_path: Path) -> None:
    # Chroot tools (schroot, pbuilder, mock) mount `/dev/pts` inside the tree they build.
    _as_root()
    other, path = terminal
    mounted = tmp_path / "pts"
    mounted.mkdir()
    if subprocess.run(["mount", "--bind", "/dev/pts", str(mounted)], capture_output=True).returncode != 0:
        pytest.skip("a bind mount cannot be made here")
    try:
        seen = run_isolated("nh_eval", f"open({str(mounted / Path(path).name)!r}, 'rb', buffering=0).read(100)")
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
    assert "hunter2" not in seen and "PermissionError" in seen
    assert _still_waiting(other) == b"hunter2\n"


def test_a_mount_hidden_under_another_leaves_the_walls_standing(tmp_path: Path) -> None:
    # Its path now leads into the mount above it: neither the walls nor the model's code can reach it by that path.
    _as_root()
    lower = tmp_path / "a" / "b"
    lower.mkdir(parents=True)
    mounted = []
    try:
        for folder in (lower, tmp_path / "a"):
            if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(folder)], capture_output=True).returncode != 0:
                pytest.skip("a mount cannot be made here")
            mounted.append(folder)
        assert "[true,true]" in run_isolated("nh_eval", "[True, True]")
    finally:
        for folder in reversed(mounted):
            subprocess.run(["umount", "-l", str(folder)], check=True)


def _mount(*arguments: str) -> None:
    if subprocess.run(["mount", *arguments], capture_output=True).returncode != 0:
        pytest.skip("a mount cannot be made here")


def test_the_users_terminals_mounted_in_dev_shm_cannot_be_read(terminal: tuple[int, str]) -> None:
    # `/dev/shm` is readable, and a mount beneath `/dev` is a mount like any other.
    _as_root()
    other, path = terminal
    mounted = Path("/dev/shm") / f"nighthawk-test-pts-{os.getpid()}"
    mounted.mkdir()
    try:
        _mount("--bind", "/dev/pts", str(mounted))
        try:
            seen = run_isolated("nh_eval", f"open({str(mounted / Path(path).name)!r}, 'rb', buffering=0).read(100)")
        finally:
            subprocess.run(["umount", str(mounted)], check=True)
    finally:
        mounted.rmdir()
    assert "hunter2" not in seen and "PermissionError" in seen
    assert _still_waiting(other) == b"hunter2\n"


def test_a_device_node_in_dev_shm_cannot_be_opened() -> None:
    _as_root()
    node = Path("/dev/shm") / f"nighthawk-test-zero-{os.getpid()}"
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    try:
        seen = run_isolated("nh_eval", f"open({str(node)!r}, 'rb').read(4)")
    finally:
        node.unlink()
    assert "PermissionError" in seen


@pytest.mark.parametrize(
    ("how", "seen_as"),
    [("mounted over", "PermissionError"), ("detached", "cannot be raised here: the working folder (one no path leads to) is in a mount the walls cannot reach")],
    ids=["mounted over", "detached"],
)
def test_a_working_folder_in_a_mount_no_path_reaches_opens_no_device(how: str, seen_as: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel entered the folder before its mount was hidden under another (the walls reach that one too), or
    # detached (`umount -l`: none can reach it, so the step does not run).
    _as_root()
    (tmp_path / "tree").mkdir()
    os.mknod(tmp_path / "tree" / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    # A mount of a whole top-level folder: Landlock's rule for it is on that folder, the mount's root, so the
    # walls' reading reaches the node from a detached copy as well.
    top = Path(*tmp_path.parts[:2])
    _mount("--bind", str(top), str(mounted))
    monkeypatch.chdir(mounted / tmp_path.relative_to(top) / "tree")
    if how == "mounted over":
        _mount("-t", "tmpfs", "tmpfs", str(mounted))
    else:
        subprocess.run(["umount", "-l", str(mounted)], check=True)
    try:
        seen = run_isolated("nh_eval", "open('zero', 'rb').read(4)")
    finally:
        if how == "mounted over":
            for _ in range(2):  # the tmpfs, then the tree beneath it
                subprocess.run(["umount", "-l", str(mounted)], check=True)
    assert seen_as in seen, seen


def test_where_a_containers_profile_refuses_mount_setattr_each_mount_is_remounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _as_root()
    from nighthawk.oversight.isolation import _mounts

    def refused(path: str, flags: int, **attrs: int) -> int:  # in the forked worker
        ctypes.set_errno(errno.EPERM)
        return -1

    monkeypatch.setattr(_mounts, "_set_attr", refused)  # every call, as a profile refuses it
    node = tmp_path / "zero"
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    assert '"value": 2' in run_isolated("nh_eval", "len(open('/dev/zero', 'rb').read(2))")
    assert "PermissionError" in run_isolated("nh_eval", f"open({str(node)!r}, 'rb').read(4)")


def test_a_top_level_link_to_the_root_does_not_open_reading_of_dev() -> None:
    # A link such as `/host -> /` would grant reading beneath `/`, and so beneath `/dev`.
    _as_root()
    link = Path(f"/nighthawk-test-root-{os.getpid()}")
    link.symlink_to("/")
    try:
        seen = run_isolated("nh_eval", "open('/dev/vcs', 'rb', buffering=0).read(16)")
    finally:
        link.unlink()
    assert "PermissionError" in seen


def test_a_bind_mount_of_the_root_at_the_top_does_not_open_reading_of_dev() -> None:
    # Landlock binds a rule to an inode: one for `/host` would be one for `/`, and so for `/dev` beneath it.
    _as_root()
    host = Path(f"/nighthawk-test-host-{os.getpid()}")
    host.mkdir()
    try:
        _mount("--bind", "/", str(host))
        try:
            seen = run_isolated("nh_eval", "open('/dev/vcs', 'rb', buffering=0).read(16)")
        finally:
            subprocess.run(["umount", str(host)], check=True)
    finally:
        host.rmdir()
    assert "PermissionError" in seen
