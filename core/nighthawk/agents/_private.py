"""Files that hand a coding agent what other local users must not read (the bridge's bearer token).

A program's command line is public on a shared machine (`ps`, `/proc/<pid>/cmdline`), so the token never
goes there: it goes into a file in a fresh folder only this user can enter (mode 0700), created with mode
0600 from the start (`O_EXCL`, so no existing file or link is reused and there is no moment when the file is
readable by others), and the folder is removed when the turn ends, however it ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["private_folder", "write_private"]


@contextmanager
def private_folder() -> Iterator[str]:
    """A new folder that only this user can enter, removed with everything in it on leaving the block."""
    folder = tempfile.mkdtemp(prefix="nighthawk-agent-")  # mode 0700, a name nobody could guess or take first
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_private(folder: str, name: str, text: str, *, mode: int = 0o600) -> str:
    """Create `name` in `folder` holding `text`, readable by this user only; its path."""
    path = os.path.join(folder, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    return path
