"""The fixed part of every request stays small: the first request of each reference block (system prompt,
tool definitions and user prompt; tests/support/reference_blocks.py) is at most 600 o200k tokens.

The exact bound needs the o200k vocabulary in TIKTOKEN_CACHE_DIR (build it offline with
`../shared/tools/tiktoken_offline_cache.sh DIR`; scripts/test.sh does) and is skipped without it. The
estimate, which every prompt budget uses and which needs nothing, is held to 800: it counts this text,
mostly JSON schema, about 1.3 times its real size.
"""

from __future__ import annotations

import hashlib
import os

import pytest
from nighthawk.prompting._tokens import estimate_tokens
from support.reference_blocks import REFERENCE_CALLS, request_texts

_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _vocabulary_cached() -> bool:
    folder = os.environ.get("TIKTOKEN_CACHE_DIR")
    return bool(folder) and os.path.exists(os.path.join(folder, hashlib.sha1(_URL.encode()).hexdigest()))


@pytest.mark.skipif(not _vocabulary_cached(), reason="the o200k_base vocabulary is not in TIKTOKEN_CACHE_DIR")
@pytest.mark.parametrize("block", list(REFERENCE_CALLS))
def test_the_first_request_of_a_reference_block_is_at_most_600_real_tokens(block: str) -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    assert sum(len(encoding.encode_ordinary(text)) for text in request_texts(REFERENCE_CALLS[block])) <= 600


@pytest.mark.parametrize("block", list(REFERENCE_CALLS))
def test_the_first_request_of_a_reference_block_is_at_most_800_estimated_tokens(block: str) -> None:
    assert sum(estimate_tokens(text) for text in request_texts(REFERENCE_CALLS[block])) <= 800
