"""Under `isolated()`, a file's mode, owner, times and attributes stay as they were wherever the file is, and the
child holds none of root's powers over the machine. Landlock walls what a file holds and where it is named, not
its metadata: the seccomp filter refuses those changes, and the child drops its capabilities before it runs
anything the model wrote.

Each attack here got through before: a `chmod` that hands another local user the user's private key (or, as
root, a set-user-ID shell), a `chown`, an immutable or no-dump flag, the host's name.
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from isolated_steps import run_isolated

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """The user's private key, outside any writable folder."""
    path = tmp_path / "ssh" / "id_ed25519"
    path.parent.mkdir()
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY-----")
    path.chmod(0o600)
    return path


def metadata(path: Path) -> tuple[int, int, int, int, list[str]]:
    found = path.stat()
    return found.st_mode, found.st_uid, found.st_gid, found.st_mtime_ns, os.listxattr(path)


def refused(read: str) -> bool:
    return "PermissionError" in read and "Operation not permitted" in read


@pytest.mark.parametrize(
    "change",
    [
        "os.chmod({path!r}, 0o644)",
        "os.chmod({path!r}, 0o4755)",
        "os.chmod({folder!r}, 0o777)",
        "os.fchmod(os.open({path!r}, os.O_RDONLY), 0o644)",
        "os.chown({path!r}, 65534, 65534)",
        "os.lchown({path!r}, 65534, 65534)",
        "os.utime({path!r}, (0, 0))",
        "os.setxattr({path!r}, 'user.planted', b'1')",
    ],
    ids=["chmod", "setuid", "chmod-folder", "fchmod-read-only", "chown", "lchown", "utime", "setxattr"],
)
def test_a_files_metadata_outside_writable_cannot_change(secret: Path, change: str) -> None:
    before = metadata(secret), metadata(secret.parent)
    read = run_isolated("nh_eval", change.format(path=str(secret), folder=str(secret.parent)).replace("os.", "__import__('os')."))
    assert refused(read), read
    assert (metadata(secret), metadata(secret.parent)) == before


@pytest.mark.parametrize(
    ("getter", "setter", "value"),
    [(0x80086601, 0x40086602, 0x40), (0x80087601, 0x40087602, 12345)],
    ids=["flags (chattr)", "inode version"],
)
def test_a_files_attributes_outside_writable_cannot_change_through_ioctl(secret: Path, getter: int, setter: int, value: int) -> None:
    def attribute() -> int:
        found = array.array("l", [0])
        with secret.open("rb") as file:
            fcntl.ioctl(file.fileno(), getter, found)
        return found[0]

    before = attribute()
    read = run_isolated(
        "nh_eval",
        f"__import__('fcntl').ioctl(__import__('os').open({str(secret)!r}, 0), {setter}, __import__('struct').pack('l', {value}))",
    )
    assert refused(read), read
    assert attribute() == before


def test_a_files_mode_cannot_change_in_a_writable_folder_either(tmp_path: Path) -> None:
    made = tmp_path / "report.sh"
    read = run_isolated("nh_eval", f"(open({str(made)!r}, 'w').write('echo'), __import__('os').chmod({str(made)!r}, 0o755))", writable=[tmp_path])
    assert refused(read), read
    assert made.read_text() == "echo"
    assert not made.stat().st_mode & stat.S_IXUSR


def test_copying_a_file_into_a_writable_folder_with_copyfile_works(secret: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    read = run_isolated("nh_eval", f"__import__('shutil').copyfile({str(secret)!r}, {str(folder / 'copy')!r})", writable=[folder])
    assert "error\": null" in read
    assert (folder / "copy").read_text() == secret.read_text()


_HELD = "{line.split(':')[0]: int(line.split()[1], 16) for line in open('/proc/self/status') if line.startswith('Cap')}"
"""What a process holds, by set, read in the child: its own, or a program's it started (`/proc/self` there)."""


@pytest.mark.parametrize(
    "whose",
    [_HELD, f"eval(__import__('subprocess').run([__import__('sys').executable, '-c', {'print(' + _HELD + ')'!r}], capture_output=True, text=True).stdout)"],
    ids=["the child", "a program it starts"],
)
def test_the_child_holds_no_capability_but_reading_and_writing_past_file_permissions(whose: str) -> None:
    kept = 1 << _CAP_DAC_OVERRIDE | 1 << _CAP_DAC_READ_SEARCH
    held = json.loads(run_isolated("nh_eval", whose))["value"]
    assert set(held) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}
    assert {name: mask & ~kept for name, mask in held.items()} == dict.fromkeys(held, 0), held


@pytest.mark.skipif(os.geteuid() != 0, reason="an ordinary user may not rename the machine anyway")
def test_a_root_child_cannot_rename_the_machine() -> None:
    name = socket.gethostname()
    read = run_isolated("nh_eval", f"__import__('socket').sethostname({name!r})")  # its own name: nothing changes if it gets through
    assert refused(read), read
    assert socket.gethostname() == name


@pytest.mark.parametrize(
    "whose",
    ["open('/proc/self/oom_score_adj').read()", "__import__('subprocess').run(['cat', '/proc/self/oom_score_adj'], capture_output=True, text=True).stdout"],
    ids=["the child", "a program it starts"],
)
def test_the_child_is_the_first_process_the_out_of_memory_killer_ends(whose: str) -> None:
    # A child counts the kernel's pages it shares as its own: without this, running the machine out of memory
    # could end the notebook's kernel instead of the child that did it.
    assert json.loads(run_isolated("nh_eval", whose))["value"].strip() == "1000"
