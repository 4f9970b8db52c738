"""The step display shows what a step sent as media: small thumbnails in HTML, a line each in text."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from kernel_scripts import outcome, scripted, step_events
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


def test_html_embeds_a_small_image_as_a_bounded_thumbnail(shown: Any) -> None:
    source = "data:image/png;base64," + base64.b64encode(png(0, 128, 0)).decode()
    assert f'<img src="{source}" alt="photo" style="max-width:160px;max-height:120px' in shown.data["text/html"]


def test_html_names_the_binding_and_its_attachment(shown: Any) -> None:
    assert "Media sent (1)" in shown.data["text/html"]
    assert "&lt;attachment 1: image/png, " in shown.data["text/html"]


def test_text_lists_the_media_sent(shown: Any) -> None:
    size = len(png(0, 128, 0))
    assert f"media sent (1):\n    <photo> <attachment 1: image/png, {size} B>" in shown.data["text/plain"]


def test_an_image_too_large_to_embed_is_named_without_a_picture(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    big = png(size=16) + b"\x00" * 200_000  # over THUMBNAIL_MAX_BYTES; bytes after IEND: still a PNG to the sniffer
    shell.user_ns["photo"] = big
    with capture_output() as captured:
        shell.run_cell("%%natural\nDescribe <photo>.")
    html = captured.outputs[0].data["text/html"]
    assert "Media sent (1)" in html and "<img" not in html


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
