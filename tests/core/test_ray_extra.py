"""`nighthawk.ray` is an extra: without Ray installed, importing it says how to install it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_nighthawk_ray_without_ray_names_the_extra_to_install() -> None:
    # `None` in `sys.modules` makes `import ray` fail as if Ray were not installed.
    code = "import sys; sys.modules['ray'] = None; import nighthawk.ray"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: `nighthawk.ray` needs Ray Data, which cannot be imported here")
    assert last.endswith('install it with `pip install "nighthawk-jupyter[ray]"`')
