"""First-request token cost of three reference blocks, split by part.

Count = tokens of (instructions + user prompt) + tokens of each offered tool serialised as JSON
`{"name", "description", "parameters"}` (function tools and output tools), for the first request of
`compute([10.0, 20.0], 0.1)`, `triage(["hello"])` and `tidy("  x  ")`.

Counts are exact (o200k_base) when tiktoken's vocabulary can be loaded (build one offline with
`../shared/tools/tiktoken_offline_cache.sh DIR`, then run with `TIKTOKEN_CACHE_DIR=DIR`), and estimated
(from the characters, `estimate_tokens`) otherwise; the output says which.

Run: python bench/bench_tokens.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "tests")]

from support.reference_blocks import REFERENCE_CALLS, first_request


def counter():
    """The exact o200k counter when its vocabulary loads, else the estimate; and its label."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return (lambda text: len(encoding.encode_ordinary(text))), "exact o200k_base"
    except Exception:  # offline with no cached vocabulary
        from nighthawk.prompting._tokens import estimate_tokens

        return estimate_tokens, "estimate (from the characters; o200k vocabulary not available)"


def reference_blocks(count) -> list[tuple[str, int, int, int, int]]:
    """`(block, total, system, user, tools)` tokens of each reference block's first request."""
    rows = []
    for name, call in REFERENCE_CALLS.items():
        request = first_request(call)
        system = count(str(request["instructions"]))
        user = count(str(request["user"]))
        tools = sum(count(tool) for tool in request["tools"])
        rows.append((name, system + user + tools, system, user, tools))
    return rows


def print_reference_blocks(count, label: str) -> None:
    """Print the table of the reference blocks' first-request tokens (goal: at most 600 each)."""
    print(f"first-request tokens ({label}; goal at most 600)")
    print(f"{'block':<10}{'total':>7}{'system':>8}{'user':>6}{'tools':>7}")
    for name, total, system, user, tools in reference_blocks(count):
        print(f"{name:<10}{total:>7}{system:>8}{user:>6}{tools:>7}")


def main() -> None:
    print_reference_blocks(*counter())


if __name__ == "__main__":
    main()
