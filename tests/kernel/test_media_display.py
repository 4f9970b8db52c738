"""The step display shows what a step sent as media: downscaled thumbnails in HTML, a line each in text;
and image bytes a step did not send are named by type and size, never shown as raw bytes."""

from __future__ import annotations

import base64
import io
import re
import sys
from dataclasses import replace
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome, scripted, step_events
from media_samples import png

from nighthawk import events
from nighthawk_ipython import StepView
from nighthawk_ipython._display import CellView


@pytest.fixture
def shown(shell: Any, use_model: Any) -> Any:
    """The display of a cell that reads one small image."""
    use_model(scripted([outcome("pass")]))
    shell.user_ns["photo"] = png(0, 128, 0)
    with capture_output() as captured:
        shell.run_cell("%%natural\nDescribe <photo>.")
    (output,) = captured.outputs
    return output


def _thumbnails(html: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'<img src="data:image/jpeg;base64,([^"]+)"', html)]


def _pixels(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG"
        return image.size


def _sent(shell: Any, use_model: Any, photo: object) -> Any:
    use_model(scripted([outcome("pass")]))
    shell.user_ns["photo"] = photo
    with capture_output() as captured:
        shell.run_cell("%%natural\nDescribe <photo>.")
    (output,) = captured.outputs
    return output


def test_html_embeds_a_small_image_as_a_jpeg_thumbnail(shown: Any) -> None:
    (thumbnail,) = _thumbnails(shown.data["text/html"])
    assert _pixels(thumbnail) == (2, 2)  # never enlarged
    assert 'alt="photo" style="max-width:160px;max-height:120px' in shown.data["text/html"]


def test_html_names_the_binding_and_its_attachment(shown: Any) -> None:
    assert "Media sent (1)" in shown.data["text/html"]
    assert "&lt;attachment 1: image/png, " in shown.data["text/html"]


def test_text_lists_the_media_sent(shown: Any) -> None:
    size = len(png(0, 128, 0))
    assert f"media sent (1):\n    <photo> <attachment 1: image/png, {size} B>" in shown.data["text/plain"]


def test_a_large_image_is_embedded_shrunk_to_160_by_120_in_a_few_kb(shell: Any, use_model: Any) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((1200, 900), 60).convert("RGB").save(buffer, format="PNG")  # a photo's worth of detail
    photo = buffer.getvalue()
    assert len(photo) > 1_000_000
    (thumbnail,) = _thumbnails(_sent(shell, use_model, photo).data["text/html"])
    assert _pixels(thumbnail) == (160, 120)
    assert len(thumbnail) < 8_000


def test_without_pillow_an_image_is_named_with_its_size_and_no_picture(
    shell: Any, use_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # `import PIL` now raises ImportError, as where it is missing
    photo = png(size=64)
    html = _sent(shell, use_model, photo).data["text/html"]
    assert "<img" not in html
    assert f"&lt;attachment 1: image/png, {len(photo)} B&gt;" in html


def test_an_image_pillow_cannot_read_is_named_without_a_picture(shell: Any, use_model: Any) -> None:
    broken = png(size=16)[:40]  # a PNG signature and a header, then nothing
    html = _sent(shell, use_model, broken).data["text/html"]
    assert "Media sent (1)" in html and "<img" not in html


def test_image_bytes_a_step_assigns_show_as_their_type_and_size(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("copy", "logo"), outcome("pass")]))
    logo = png(size=64)
    shell.user_ns["logo"] = logo
    with capture_output() as captured:
        shell.run_cell("%%natural\nSet <:copy> to the logo.")
    (output,) = captured.outputs
    summary = f"<image/png, {len(logo)} B>"
    assert summary in output.data["text/plain"]
    assert summary.replace("<", "&lt;").replace(">", "&gt;") in output.data["text/html"]
    assert "PNG" not in output.data["text/plain"].replace("image/png", "")


def test_the_live_widget_shows_the_thumbnail_while_the_step_runs() -> None:
    stream = step_events(calls=1)[:3]  # StepStarted, PromptRendered, ToolCallStarted
    image = png(9, 9, 9)
    media = (events.MediaShown(binding="photo", media_type="image/png", placeholder="<attachment 1>", thumbnail=image),)
    stream[1] = replace(stream[1], media=media)
    view = CellView(mode="widget")
    step = StepView(stream[0])
    view.add(step)
    for event in stream[1:]:
        step.apply(event)
    assert base64.b64encode(image).decode() in view.live_html()
