"""Removing an isolated child's temporary folder, whatever shape the model's code gave it."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["remove_folder"]


def remove_folder(folder: str) -> None:
    """Remove `folder` and everything beneath it, following no link. A folder the model's code made read-only
    (`mkdir(path, 0o555)`: the filter refuses `chmod`, not a mode at creation) is made writable first, as
    `tempfile.TemporaryDirectory` does; a tree deeper than Python's recursion limit (`shutil.rmtree` recurses on
    Python 3.11) is left to `rm`, which walks any depth; a folder that cannot be removed is left, never a
    reason to fail."""
    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(folder, onexc=_writable_and_again)
        else:
            shutil.rmtree(folder, onerror=_writable_and_again)
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["rm", "-rf", "--", folder], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                check=False, timeout=600,
            )


def _writable_and_again(function: Callable[..., Any], path: str, error: object) -> None:
    """`rmtree`'s handler: a removal refused for want of permission is tried again once the folder holding `path`
    (and `path`, if a folder) may be written and read."""
    exception = error[1] if isinstance(error, tuple) else error  # `onerror` hands the exception's info, `onexc` it
    if not isinstance(exception, PermissionError):
        raise exception  # type: ignore[misc]
    for folder in {os.path.dirname(path), path}:
        with contextlib.suppress(OSError):
            if os.path.isdir(folder) and not os.path.islink(folder):
                os.chmod(folder, stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        remove_folder(path)
    else:
        function(path)
