"""An isolated step runs when the kernel holds many descriptors (a notebook with a thousand open files or
sockets): the child keeps their numbers, pointed at /dev/null, and still has room to open its own."""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterator

import pytest

import nighthawk as nh
from scripting import finish, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")


@nh.natural_function
def count() -> int:
    """natural
    Return how many lines this file has.
    """


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    if wanted < 2048:
        pytest.skip(f"this process may open {hard} files only")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(1500)]
    try:
        yield
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.usefixtures("many_descriptors")
def test_an_isolated_step_runs_when_the_kernel_holds_fifteen_hundred_descriptors() -> None:
    expression = "sum(1 for _ in open(__import__('inspect').getfile(count)))"
    executor, _ = scripted_executor([finish("return", return_expression=expression)])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        assert count() == len(open(__file__).read().splitlines())
