"""The channel between the kernel and its isolated child takes no answer longer than the child could make."""

from __future__ import annotations

from isolated_steps import run_isolated


def test_an_answer_longer_than_the_childs_memory_limit_is_not_read() -> None:
    # The model's code finds the channel in the frames that run it and announces a gigabyte: a kernel that read
    # on would hold whatever the child streams, for as long as it streams.
    channel = "next(info.frame.f_locals['channel'] for info in __import__('inspect').stack() if 'channel' in info.frame.f_locals)"
    flood = f"((c := {channel}).sendall(__import__('struct').pack('!Q', 2**30)), c.sendall(bytes(50_000_000)), __import__('os')._exit(0))"
    read = run_isolated("nh_eval", flood, memory_mb=64)
    assert "announced an answer of 1,073,741,824 bytes" in read
    assert "more than its memory limit (64 MiB)" in read
