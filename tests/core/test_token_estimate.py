"""The tokenizer-free estimate never undercounts the real o200k/cl100k count by more than 10%.

Runs against the exact vocabularies where TIKTOKEN_CACHE_DIR holds them (build the folder offline with
`../shared/tools/tiktoken_offline_cache.sh DIR`); elsewhere each test is skipped, saying so. The project's
other tests never need a vocabulary.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import random
import uuid

import pytest

import nighthawk as nh
from nighthawk.prompting._tokens import estimate_tokens
from scripting import call, finish, scripted_executor

ENCODINGS = ("o200k_base", "cl100k_base")
_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def _cached(name: str) -> bool:
    folder = os.environ.get("TIKTOKEN_CACHE_DIR")
    return bool(folder) and os.path.exists(os.path.join(folder, hashlib.sha1(_URLS[name].encode()).hexdigest()))


pytestmark = pytest.mark.skipif(
    not all(map(_cached, ENCODINGS)),
    reason="the o200k_base and cl100k_base vocabularies are not in TIKTOKEN_CACHE_DIR "
    "(build it with ../shared/tools/tiktoken_offline_cache.sh DIR)",
)


def exact(text: str) -> int:
    """The larger of the two real counts."""
    import tiktoken

    return max(len(tiktoken.get_encoding(name).encode_ordinary(text)) for name in ENCODINGS)


def corpus() -> dict[str, str]:
    rng = random.Random(7)
    return {
        "dict of number lists": repr({f"k{i}": [rng.randint(0, 10 ** rng.randint(1, 9)) for _ in range(30)] for i in range(8)}),
        "floats": repr([rng.random() * 10 ** rng.randint(-3, 6) for _ in range(200)]),
        "long digit string": "".join(str(rng.randint(0, 9)) for _ in range(3000)),
        "json punctuation": json.dumps([{"a": [1, {"b": None}], "c": {"d": [True, False]}} for _ in range(40)]),
        "json records": json.dumps([{"id": i, "name": f"user{i}", "email": f"u{i}@example.com"} for i in range(50)]),
        "punctuation runs": "!?.,;:-=+*/<>()[]{}|&^%$#@~`" * 60,
        "python code": "\n".join(
            f"def compute_{i}(items: list[int], rate: float = 0.{i}) -> float:\n    return sum(x * rate for x in items if x > {i})\n"
            for i in range(40)
        ),
        "snake and camel identifiers": " ".join(f"my_total_{i} = getUserAccountById{i}(ctx, HTTPCode)" for i in range(60)),
        "english prose": "The quick brown fox jumps over the lazy dog while the analyst reads the quarterly report. " * 40,
        "german compounds": "Donaudampfschifffahrtsgesellschaftskapitän und Straßenbahnhaltestelle sind lange Wörter. " * 30,
        "accented latin": "Élève café naïve façade résumé über straße jalapeño São Paulo Kraków " * 40,
        "russian": "Привет мир это тестовое предложение для подсчета токенов " * 40,
        "arabic": "مرحبا بالعالم هذه جملة اختبار لحساب الرموز " * 40,
        "chinese": "自然语言处理是人工智能的一个重要领域，它研究如何让计算机理解和生成人类语言。" * 25,
        "japanese": "これは日本語のテキストです。東京は日本の首都であり、多くの人が住んでいます。" * 30,
        "korean": "안녕하세요 이것은 한국어 문장입니다 토큰 수를 계산합니다 " * 40,
        "rare cjk": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(1500)),
        "emoji": "".join(rng.choice("😀🎉🚀🔥✨💡🐍📈") for _ in range(500)),
        "base64": base64.b64encode(rng.randbytes(3000)).decode(),
        "hex": rng.randbytes(2000).hex(),
        "bytes repr": repr(rng.randbytes(800)),
        "random letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(3000)),
        "uuids": " ".join(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(80)),
        "whitespace runs": "".join(" " * rng.randint(1, 40) + "x" + "\n" * rng.randint(0, 3) + "\t" * rng.randint(0, 3) for _ in range(300)),
        "urls": " ".join(f"https://example{i}.com/p/{rng.randint(0, 99999)}/item?id={rng.randint(0, 10**6)}&ref=a{i}#f" for i in range(60)),
        "timestamps": repr([datetime.datetime(2024, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23)) for _ in range(60)]),
        "table of floats": "\n".join("  ".join(f"{rng.random():.4f}" for _ in range(8)) for _ in range(60)),
        "one character": "x",
    }


CORPUS = corpus()


@pytest.mark.parametrize("kind", list(CORPUS))
def test_the_estimate_is_at_least_nine_tenths_of_the_real_count(kind: str) -> None:
    text = CORPUS[kind]
    assert estimate_tokens(text) >= 0.9 * exact(text)


@pytest.mark.parametrize("kind", ["dict of number lists", "json records", "chinese", "base64"])
def test_a_prefix_is_estimated_as_safely_as_the_whole(kind: str) -> None:
    # Budgets cut text at a point the estimate picks: the cut-off piece must hold too.
    for length in (10, 50, 200, 1000):
        piece = CORPUS[kind][:length]
        assert estimate_tokens(piece) >= 0.9 * exact(piece)


def test_a_tool_result_budget_of_200_holds_in_real_tokens_for_a_dict_of_number_lists() -> None:
    rng = random.Random(3)
    data = {f"series_{i}": [rng.randint(0, 10**6) for _ in range(200)] for i in range(6)}

    @nh.natural_function
    def inspect_data(data: dict[str, list[int]]) -> None:
        """natural
        Look at <data>.
        """

    executor, script = scripted_executor([call("nh_eval", expression="data")], [finish("pass")])
    limits = nh.StepContextLimits(tool_result_max_tokens=200)
    executor = executor.with_configuration(nh.StepExecutorConfiguration(model=executor.configuration.model, context_limits=limits))
    with nh.run(executor):
        inspect_data(data)
    (result,) = script.last_tool_results()
    value = result.removeprefix('{"value": ').removesuffix(', "error": null}')  # the rendered value, as shown
    assert exact(value) <= 1.1 * 200
