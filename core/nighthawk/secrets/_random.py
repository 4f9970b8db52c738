"""Long random-looking tokens: when a run of token characters is taken for a credential with no known
prefix, and the public data that only looks like one.

A run of 32 to 256 letters, digits and `+/_-` mixing cases and digits, with the spread of characters random
generators give, is a candidate (an API secret, the `Zm9v...` of a basic-auth header). Public values with
that look are told apart by their structure, never by their name: an integrity hash, the base64 of an image
or of a JSON payload, an IPFS content id, a Bitcoin address (its checksum), a Google Drive file id, a
Stripe publishable key and the body of an SSH public key. The package face's rules use this module; it
imports nothing of ours.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

__all__ = ["SHORTEST_RANDOM_TOKEN", "TOKEN_BYTES", "TOKEN_RUN", "is_random_token", "random_tokens"]


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use."""
    return lru_cache(maxsize=1)(lambda: re.compile(pattern, flags))


# A run longer than any credential stays visible (a base64 image is data).
TOKEN_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{32,256}={0,2}(?![A-Za-z0-9+/_\-=])")
SHORTEST_RANDOM_TOKEN = 32
# Bits per character: random base62 text of 32 characters stays above 4.3 nineteen times in twenty, English
# camelCase identifiers (`ThisIsAVeryLongCamelCase2Identifier`) stay below it. A slash makes a path look
# random, so a token with one needs more.
_RANDOM_BITS = 4.3
_RANDOM_BITS_WITH_SLASH = 4.5


def _entropy(text: str) -> float:
    size = len(text)
    return -sum(count / size * math.log2(count / size) for count in Counter(text).values())


# A subresource-integrity hash (`sha384-oqVu...`): random-looking, public, and in every HTML page that loads a
# script. Only the exact sizes of the three digests count, so a key cannot hide behind a `sha256-` prefix.
_INTEGRITY = _lazy(r"sha256-[A-Za-z0-9+/]{43}=|sha384-[A-Za-z0-9+/]{64}|sha512-[A-Za-z0-9+/]{86}==")
# The start of one, at the end of a text cut to a budget (rendering scrubs the window it shows).
_CUT_INTEGRITY = _lazy(r"sha(?:256|384|512)-[A-Za-z0-9+/]{1,85}")
# Stripe's publishable keys are meant to be put in web pages (the secret ones, `sk_`/`rk_`, are a shape).
_PUBLISHABLE = _lazy(r"pk_(?:live|test)_[A-Za-z0-9]{16,}")
# A Google Drive file id (33 characters) or a Docs or Sheets id (44): a `1` then Drive's alphabet.
_DRIVE_ID = _lazy(r"1[A-Za-z0-9_\-]{32}|1[A-Za-z0-9_\-]{43}")
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# The first bytes of the media a notebook holds as base64 (PNG, JPEG, GIF, WebP and other RIFF, PDF, MP3,
# Ogg, WOFF fonts, MP4's `ftyp` box).
_MEDIA_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF", b"%PDF-", b"ID3", b"OggS", b"wOFF", b"wOF2")
# The key types an SSH public key's body names first (`ssh-ed25519 AAAAC3NzaC1lZDI1NTE5...`).
_SSH_KEY_TYPES = (b"ssh-rsa", b"ssh-dss", b"ssh-ed25519", b"ecdsa-sha2-", b"sk-ssh-ed25519@", b"sk-ecdsa-sha2-")


def is_random_token(token: str, holds_credential: Callable[[str], bool] | None = None) -> bool:
    """Whether a run of token characters looks generated: upper, lower and digits mixed, high entropy, and
    none of the public values that look random. `holds_credential` judges the text of a base64 JSON
    payload: one that holds a credential stays a token."""
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token) and sum(c.isdigit() for c in token) >= 2):
        return False
    if _entropy(token) < (_RANDOM_BITS_WITH_SLASH if "/" in token else _RANDOM_BITS):
        return False
    return not _is_public(token, holds_credential)


def _is_public(token: str, holds_credential: Callable[[str], bool] | None) -> bool:
    if _INTEGRITY().fullmatch(token) or _PUBLISHABLE().fullmatch(token) or _DRIVE_ID().fullmatch(token):
        return True
    if token[0] in "13Q" and _is_address_or_content_id(token):
        return True
    head = _b64decode(token[:16])
    if head is not None and (head.startswith(_MEDIA_MAGIC) or head[4:8] == b"ftyp"):
        return True
    whole = _b64decode(token)
    if whole is None:
        return False
    if _is_ssh_public_key(whole):
        return True
    return whole[:1] in (b"{", b"[") and _is_json(whole, holds_credential)


def _b64decode(text: str) -> bytes | None:
    """`text` as standard or URL-safe base64 (padding optional, a cut tail dropped), or None."""
    text = text.rstrip("=")
    text = text[: len(text) - len(text) % 4] if len(text) % 4 == 1 else text
    try:
        return base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_address_or_content_id(token: str) -> bool:
    """A Bitcoin address (base58 with version 0 or 5 and a valid checksum) or an IPFS CIDv0 (`Qm...`, a
    SHA-256 multihash)."""
    if not all(char in _BASE58 for char in token):
        return False
    number = 0
    for char in token:
        number = number * 58 + _BASE58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(token) - len(token.lstrip("1"))) + raw
    if token[0] == "Q":
        return len(token) == 46 and raw[:2] == b"\x12\x20" and len(raw) == 34
    import hashlib  # about 2 ms to import: only for a token that may be an address

    if len(raw) != 25 or raw[0] not in (0, 5):
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def _is_ssh_public_key(blob: bytes) -> bool:
    """Whether `blob` starts as the wire form of an SSH public key: a length, then a known key type."""
    size = int.from_bytes(blob[:4], "big")
    return 7 <= size <= 40 and len(blob) > 4 + size and blob[4 : 4 + size].startswith(_SSH_KEY_TYPES)


def _is_json(blob: bytes, holds_credential: Callable[[str], bool] | None) -> bool:
    """Whether `blob` is a JSON object or array holding no credential (a base64 payload of data)."""
    import json  # loaded only for a token that decodes to `{` or `[`

    try:
        text = blob.decode("utf-8")
        json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return holds_credential is None or not holds_credential(text)


# Token characters become `a`, everything else (non-ASCII bytes included) a space: one `in` test on the
# translated bytes then tells whether any run is long enough, several times faster than the regex scan.
TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_TOKEN_TABLE = bytes(ord("a") if byte in TOKEN_BYTES else ord(" ") for byte in range(256))
_LONG_RUN = b"a" * SHORTEST_RANDOM_TOKEN


def random_tokens(text: str, holds_credential: Callable[[str], bool] | None = None) -> list[tuple[int, int]]:
    """The spans of the random tokens of `text`."""
    if len(text) < SHORTEST_RANDOM_TOKEN or _LONG_RUN not in text.encode("utf-8", "surrogatepass").translate(_TOKEN_TABLE):
        return []
    return [
        match.span()
        for match in TOKEN_RUN.finditer(text)
        if is_random_token(match.group(0), holds_credential)
        and not (match.end() == len(text) and _CUT_INTEGRITY().fullmatch(match.group(0)))
        and not _MEDIA_DATA_URI().search(text, max(0, match.start() - 128), match.start())
    ]


# The base64 of an image, a sound, a video or a font in a data URI (`data:image/png;base64,iVBOR...`) is data.
_MEDIA_DATA_URI = _lazy(r"data:(?:image|audio|video|font)/[\w.+\-]+(?:;[\w.\-]+=[\w.\-]+)*;base64,\Z", re.IGNORECASE)
