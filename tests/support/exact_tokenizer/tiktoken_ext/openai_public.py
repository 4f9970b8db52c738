"""A stand-in for tiktoken's OpenAI encodings that loads offline, for testing "the vocabulary is available".

Put the folder above this one first on `PYTHONPATH` (or `sys.path`): tiktoken finds its encodings through the
`tiktoken_ext` namespace package, and this module then shadows the real `tiktoken_ext.openai_public`, so
`tiktoken.get_encoding("o200k_base")` succeeds with no download and no cache. The vocabulary is one token
per byte: a real tiktoken `Encoding` whose counts differ from Nighthawk's estimate (about four bytes per
token) on any text longer than a few bytes, which is what a test of "the exact tokenizer does not change
the prompt" needs.
"""

from __future__ import annotations

from typing import Any

_PATTERN = r"\S+|\s+"


def _byte_level(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "pat_str": _PATTERN,
        "mergeable_ranks": {bytes([value]): value for value in range(256)},
        "special_tokens": {"<|endoftext|>": 256},
    }


ENCODING_CONSTRUCTORS = {
    name: (lambda name=name: _byte_level(name))
    for name in ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony")
}
