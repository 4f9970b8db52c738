"""Images and documents among a step's read bindings, sent to the model as media beside the prompt text.

A value counts as media when it is a pydantic-ai media value (`BinaryContent`, `ImageUrl`, `DocumentUrl`,
...), an `IPython.display.Image`, `bytes` whose first bytes are a known image or PDF signature, a
`pathlib.Path` to such a file, a matplotlib `Figure` or a PIL `Image`, or a list or tuple made only of those.
The libraries behind the last ones are never imported to recognise or convert a value: a value is
recognised by the module its type comes from, and converted with its own methods, so none of them is a
dependency. Pillow, where installed, only shrinks what a step sent into the thumbnail its display shows.

Only the values of the block's `<name>` bindings are looked at, when the step starts; each becomes one
numbered `Attachment` (a list, one per item), and its line in LOCALS shows a placeholder naming it.
"""

from __future__ import annotations

import hashlib
import io
import pathlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import NighthawkError
from ..events import MediaShown
from ._reprs import SNIFF_BYTES, size_text, sniff_media_type

__all__ = [
    "FIGURE_DPI",
    "THUMBNAIL_SIZE",
    "Attachment",
    "collect_attachments",
    "media_of",
    "media_placeholders",
    "media_refusal",
    "media_shown",
    "thumbnail",
    "tool_result_media",
    "user_content",
]

FIGURE_DPI = 100
"""Resolution a matplotlib figure is rendered at: matplotlib's screen default, legible to a vision model
without paying for a print-quality image."""

THUMBNAIL_SIZE = (160, 120)
"""The box a display's thumbnail fits in, in pixels: a downscaled JPEG of a few kB, not the image sent."""

_THUMBNAIL_QUALITY = 75  # JPEG quality: a 160x120 chart or photo in 2-5 kB, still legible as a preview
# Images are decoded to be shrunk; one with more pixels than this (a decompression bomb, a scan at print
# resolution) is not decoded for a preview at all. The sent image itself is bounded by `media_max_bytes`.
_THUMBNAIL_MAX_PIXELS = 50_000_000

_URL_SHOWN = 120  # characters of a URL a placeholder shows (a signed URL runs to hundreds)
# The `kind` of every pydantic-ai media value; `BinaryContent` is `binary`, the URL types `*-url`.
_PYDANTIC_AI_KINDS = frozenset({"binary", "image-url", "document-url", "audio-url", "video-url"})


@dataclass(frozen=True, kw_only=True)
class Attachment:
    """One image or document sent with a step's prompt."""

    binding: str
    """The read binding whose value it is (`fig` for `<fig>`)."""

    number: int
    """Its position among the step's attachments, from 1; the placeholder and the label use it."""

    media_type: str
    """The MIME type, `image/png`, `application/pdf`, ..."""

    data: bytes | None = None
    """The content; `None` when the model is sent a URL instead."""

    url: str | None = None
    """The address of a URL attachment (`ImageUrl`, `DocumentUrl`, ...)."""

    source: Any = None
    """The pydantic-ai media value given by the user, sent as it is (its vendor settings kept)."""

    @property
    def size(self) -> int:
        """Bytes of content (0 for a URL)."""
        return 0 if self.data is None else len(self.data)

    @property
    def sha256(self) -> str | None:
        """The content's hash (hex), or `None` for a URL."""
        return None if self.data is None else hashlib.sha256(self.data).hexdigest()

    @property
    def placeholder(self) -> str:
        """What LOCALS shows in place of the value: `<attachment 1: image/png, 12.3 kB>`."""
        where = size_text(self.size) if self.url is None else _cut(self.url, _URL_SHOWN)
        return f"<attachment {self.number}: {self.media_type}, {where}>"

    def content(self) -> Any:
        """The pydantic-ai value the model is sent."""
        if self.source is not None:
            return self.source
        from pydantic_ai.messages import (  # here: `import nighthawk` leaves pydantic-ai out
            BinaryContent,
            ImageUrl,
        )

        if self.data is None:
            assert self.url is not None
            return ImageUrl(self.url)
        return BinaryContent(self.data, media_type=self.media_type)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _module(value: object) -> str:
    return type(value).__module__ or ""


def _from_path(path: pathlib.Path, max_bytes: int, binding: str) -> tuple[str, bytes] | None:
    """The media type and bytes of the file at `path`, or `None` when it is no image or PDF (or no file)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as file:
            media_type = sniff_media_type(file.read(SNIFF_BYTES))
            if media_type is None:
                return None
            size = path.stat().st_size
            if size > max_bytes:
                raise NighthawkError(
                    f"`<{binding}>` is the file {str(path)!r} of {size} bytes, over "
                    f"`StepContextLimits.media_max_bytes` ({max_bytes}); pass a smaller file or raise the limit"
                )
            file.seek(0)
            return media_type, file.read(max_bytes + 1)
    except OSError:
        return None


def _render_figure(figure: Any) -> bytes:
    buffer = io.BytesIO()
    # No `Software` entry: the PNG's bytes then depend on the picture only, so a replay key stays the same.
    figure.savefig(buffer, format="png", dpi=FIGURE_DPI, metadata={"Software": None})
    return buffer.getvalue()


def _render_pil(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def media_of(value: object, *, max_bytes: int, binding: str = "value") -> Attachment | None:
    """`value` as an attachment numbered 0 (its binding and number are set by the caller), or `None`.

    Args:
        value: Any value; only the forms the module notes list are media.
        max_bytes: The largest file read for a `pathlib.Path`.
        binding: The binding's name, for the message of a file over the limit.

    Raises:
        NighthawkError: `value` is a path to an image or PDF larger than `max_bytes`, or a figure or image
            that fails to draw itself.
    """
    module = _module(value)
    if module.startswith("pydantic_ai") and getattr(value, "kind", None) in _PYDANTIC_AI_KINDS:
        data = getattr(value, "data", None)
        url = getattr(value, "url", None)
        try:
            media_type = str(value.media_type)  # type: ignore[attr-defined]
        except ValueError:  # a URL with no telling extension: the provider fetches it and finds out
            media_type = "unknown"
        return Attachment(binding=binding, number=0, media_type=media_type, data=data, url=url, source=value)
    if isinstance(value, bytes | bytearray):
        media_type = sniff_media_type(value)
        return None if media_type is None else Attachment(binding=binding, number=0, media_type=media_type, data=bytes(value))
    if isinstance(value, pathlib.Path):
        found = _from_path(value, max_bytes, binding)
        return None if found is None else Attachment(binding=binding, number=0, media_type=found[0], data=found[1])
    if module.startswith("IPython") and type(value).__name__ == "Image":
        data, url = getattr(value, "data", None), getattr(value, "url", None)
        if isinstance(data, bytes) and (media_type := sniff_media_type(data)) is not None:
            return Attachment(binding=binding, number=0, media_type=media_type, data=data)
        if isinstance(url, str) and url.startswith(("http://", "https://")):  # `Image(url=...)` not embedded
            return Attachment(binding=binding, number=0, media_type=f"image/{getattr(value, 'format', 'png')}", url=url)
        return None
    if module.startswith("matplotlib") and hasattr(value, "savefig"):
        return Attachment(binding=binding, number=0, media_type="image/png", data=_drawn(_render_figure, value, binding))
    if module.startswith("PIL") and hasattr(value, "save") and hasattr(value, "mode"):
        return Attachment(binding=binding, number=0, media_type="image/png", data=_drawn(_render_pil, value, binding))
    return None


def _drawn(render: Callable[[Any], bytes], value: object, binding: str) -> bytes:
    try:
        return render(value)
    except Exception as exc:
        raise NighthawkError(
            f"`<{binding}>` ({type(value).__name__}) could not be drawn as a PNG: {type(exc).__name__}: {exc}"
        ) from exc


def _media_items(name: str, value: object, max_bytes: int) -> list[Attachment]:
    """The attachments of one binding: its value, or every item of a list or tuple made only of media."""
    single = media_of(value, max_bytes=max_bytes, binding=name)
    if single is not None:
        return [single]
    if not isinstance(value, list | tuple) or not value:
        return []
    # The first item decides: a list of numbers is not read through to its end.
    first = media_of(value[0], max_bytes=max_bytes, binding=name)
    if first is None:
        return []
    items = [first, *(media_of(item, max_bytes=max_bytes, binding=name) for item in value[1:])]
    return [item for item in items if item is not None] if all(items) else []


def collect_attachments(
    reads: Iterable[str], values: Mapping[str, object], *, max_items: int, max_bytes: int
) -> tuple[Attachment, ...]:
    """The attachments of a step: the media among the values of its read bindings, numbered in read order.

    Args:
        reads: The block's `<name>` bindings, in order; nothing else in scope is attached.
        values: The step's locals, which hold the read values.
        max_items: `StepContextLimits.media_max_items`.
        max_bytes: `StepContextLimits.media_max_bytes`, for all attachments together.

    Raises:
        NighthawkError: The attachments are more, or larger, than the limits allow.
    """
    found: list[Attachment] = []
    for name in dict.fromkeys(reads):
        if name not in values:
            continue
        for item in _media_items(name, values[name], max_bytes):
            found.append(replace(item, number=len(found) + 1))
    if len(found) > max_items:
        raise NighthawkError(
            f"the block attaches {len(found)} images or documents ({_names(found)}), over "
            f"`StepContextLimits.media_max_items` ({max_items}); read fewer in one block, run one block per item "
            "with `nighthawk.map`, or raise the limit"
        )
    total = sum(item.size for item in found)
    if total > max_bytes:
        raise NighthawkError(
            f"the block attaches {total} bytes of images or documents ({_names(found)}), over "
            f"`StepContextLimits.media_max_bytes` ({max_bytes}); pass smaller images or raise the limit"
        )
    return tuple(found)


def _names(attachments: Sequence[Attachment]) -> str:
    return ", ".join(f"<{name}>" for name in dict.fromkeys(item.binding for item in attachments))


def media_placeholders(attachments: Sequence[Attachment]) -> dict[str, str]:
    """What LOCALS shows for each binding with attachments: one placeholder, or a list of them."""
    by_name: dict[str, list[str]] = {}
    for item in attachments:
        by_name.setdefault(item.binding, []).append(item.placeholder)
    return {name: shown[0] if len(shown) == 1 else f"[{', '.join(shown)}]" for name, shown in by_name.items()}


def user_content(prompt: str, attachments: Sequence[Attachment]) -> str | list[Any]:
    """The user prompt the model is sent: the text alone, or the text then each attachment after its label."""
    if not attachments:
        return prompt  # a step without media sends exactly the prompt it always did
    content: list[Any] = [prompt]
    for item in attachments:
        content += [f"Attachment {item.number} (<{item.binding}>):", item.content()]
    return content


def media_shown(attachments: Sequence[Attachment]) -> tuple[MediaShown, ...]:
    """The attachments as a display shows them: the placeholder, and a thumbnail of each image."""
    return tuple(
        MediaShown(
            binding=item.binding,
            media_type=item.media_type,
            placeholder=item.placeholder,
            thumbnail=thumbnail(item.data) if item.data is not None and item.media_type.startswith("image/") else None,
        )
        for item in attachments
    )


def thumbnail(data: bytes) -> bytes | None:
    """`data` (an image) shrunk to fit `THUMBNAIL_SIZE`, as JPEG bytes; `None` without Pillow, or for an
    image Pillow cannot read or that is too large to decode for a preview."""
    try:
        # Here: Pillow is no dependency of Nighthawk (only of its tests), and `import nighthawk` leaves it out.
        from PIL import Image
    except ImportError:
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header only
            width, height = image.size
            if width * height > _THUMBNAIL_MAX_PIXELS:
                return None
            image.draft("RGB", (THUMBNAIL_SIZE[0] * 2, THUMBNAIL_SIZE[1] * 2))  # a JPEG decodes at a fraction
            image.thumbnail(THUMBNAIL_SIZE)
            small = image.convert("RGBA")
        flat = Image.new("RGB", small.size, "white")  # JPEG has no transparency: flatten on white
        flat.paste(small, mask=small.getchannel("A"))
        buffer = io.BytesIO()
        flat.save(buffer, format="JPEG", quality=_THUMBNAIL_QUALITY)
        return buffer.getvalue()
    except Exception:  # a truncated or odd image: the display names it without a picture
        return None


def tool_result_media(value: object, *, max_bytes: int) -> Any:
    """The pydantic-ai media value to send with a tool result that is an image or document, or `None`.

    A path is not read here: a model listing files should not load them. Media over `max_bytes` stay a repr.
    """
    if isinstance(value, pathlib.Path):
        return None
    try:
        found = media_of(value, max_bytes=max_bytes)
    except NighthawkError:  # a value that cannot draw itself: the model still has its repr
        return None
    return None if found is None or found.size > max_bytes else found.content()


_REFUSAL_WORDS = re.compile(r"image|vision|multimodal|media|pdf|document|binary|file|attachment|content type", re.I)


def media_refusal(detail: str, attachments: Sequence[Attachment], messages: Sequence[Any], model: str) -> str | None:
    """The one-sentence message for a provider that refused the media of a step, or `None` when `detail` (the
    provider's error) is about something else or the step sent no media."""
    sources = [f"`<{name}>`" for name in dict.fromkeys(item.binding for item in attachments)]
    if any(_carries_media(part) for message in messages for part in getattr(message, "parts", ())):
        sources.append("an `nh_eval` result")
    if not sources or not _REFUSAL_WORDS.search(detail):
        return None
    first_line = detail.strip().splitlines()[0][:300] if detail.strip() else "no reason given"
    return (
        f"the model {model!r} refused the image or document sent for {' and '.join(sources)} ({first_line}); "
        "choose a model that reads images and documents, or pass a text description instead"
    )


def _carries_media(part: Any) -> bool:
    content = getattr(part, "content", None)
    return getattr(part, "part_kind", "") == "tool-return" and isinstance(content, list) and any(
        getattr(item, "kind", None) in _PYDANTIC_AI_KINDS for item in content
    )
