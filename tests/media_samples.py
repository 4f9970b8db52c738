"""Small images and documents for the media tests, built from bytes (no imaging library needed)."""

from __future__ import annotations

import struct
import zlib

from pydantic_ai.messages import ModelMessage, UserPromptPart

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def png(red: int = 255, green: int = 0, blue: int = 0, size: int = 2) -> bytes:
    """A valid `size` x `size` PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes((red, green, blue)) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def prompt_content(messages: list[ModelMessage]) -> str | list[object]:
    """The content of the first user prompt part of a request's history."""
    for message in messages:
        for part in getattr(message, "parts", ()):
            if isinstance(part, UserPromptPart):
                return part.content  # type: ignore[return-value]
    raise AssertionError("no user prompt in the request")


def locals_line(content: str | list[object], name: str) -> str:
    """The LOCALS line of `name` in a prompt (text or multimodal content)."""
    text = content if isinstance(content, str) else content[0]
    assert isinstance(text, str)
    return next(line for line in text.splitlines() if line.startswith(f"{name}:"))
