"""Removing an isolated child's temporary folder, whatever shape the model's code gave it."""

from __future__ import annotations

import contextlib
import shutil
import subprocess

__all__ = ["remove_folder"]


def remove_folder(folder: str) -> None:
    """Remove `folder` and everything beneath it, following no link. A tree deeper than Python's recursion
    limit (the model's code may nest thousands of folders; `shutil.rmtree` recurses on Python 3.11) is left to
    `rm`, which walks any depth; a folder that cannot be removed is left, never a reason to fail."""
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["rm", "-rf", "--", folder], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                check=False, timeout=600,
            )
