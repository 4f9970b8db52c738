"""Images and documents named by `<name>` reach the model as media, with a placeholder in LOCALS."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import BinaryContent, ImageUrl

import nighthawk as nh
from media_samples import PDF, locals_line, png, prompt_content
from scripting import finish, scripted_executor


@nh.natural_function
def describe(photo: object) -> None:
    """natural
    Describe <photo>.
    """


def sent(value: object) -> list[object]:
    """The user prompt content the model receives when `describe(value)` runs."""
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        describe(value)
    content = prompt_content(script.seen[0])
    assert isinstance(content, list), f"no media sent; the prompt was text only:\n{content}"
    return content


def png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


def test_png_bytes_are_sent_as_binary_content_after_their_label() -> None:
    image = png()
    content = sent(image)
    assert content[1:] == ["Attachment 1 (<photo>):", BinaryContent(image, media_type="image/png")]


def test_the_locals_line_of_a_media_binding_names_its_attachment() -> None:
    image = png()
    assert locals_line(sent(image), "photo") == f"photo: bytes = <attachment 1: image/png, {len(image)} B>"


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"\xff\xd8\xff\xe0" + b"\x00" * 40, "image/jpeg"),
        (b"GIF89a" + b"\x00" * 40, "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 40, "image/webp"),
        (PDF, "application/pdf"),
    ],
)
def test_bytes_are_recognised_by_their_content(data: bytes, media_type: str) -> None:
    assert sent(data)[2] == BinaryContent(data, media_type=media_type)


def test_bytes_of_no_known_format_stay_a_value_in_locals() -> None:
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        describe(b"plain bytes")
    content = prompt_content(script.seen[0])
    assert isinstance(content, str)
    assert locals_line(content, "photo") == "photo: bytes = \"b'plain bytes'\""


def test_a_path_to_an_image_is_read_when_the_step_starts(tmp_path: Path) -> None:
    path = tmp_path / "photo.dat"  # the name says nothing: the content decides
    path.write_bytes(image := png(0, 255, 0))
    assert sent(path)[2] == BinaryContent(image, media_type="image/png")


def test_a_path_to_a_text_file_stays_a_path(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        describe(path)
    assert isinstance(prompt_content(script.seen[0]), str)


def test_a_pydantic_ai_media_value_is_sent_as_given() -> None:
    image = BinaryContent(png(), media_type="image/png", vendor_metadata={"detail": "low"})
    assert sent(image)[2] is image


def test_an_image_url_is_sent_as_a_url_and_named_in_locals() -> None:
    url = ImageUrl("https://example.com/cat.png")
    content = sent(url)
    assert content[2] is url
    assert locals_line(content, "photo") == (
        "photo: ImageUrl = <attachment 1: image/png, https://example.com/cat.png>"
    )


def test_an_ipython_image_is_sent_as_its_bytes() -> None:
    from IPython.display import Image

    image = png(0, 0, 255)
    assert sent(Image(data=image))[2] == BinaryContent(image, media_type="image/png")


def test_a_matplotlib_figure_is_rendered_to_png_at_100_dpi() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1.5))
    figure.add_subplot().plot([1, 3, 2])
    media = sent(figure)[2]
    assert isinstance(media, BinaryContent) and media.media_type == "image/png"
    assert png_size(media.data) == (200, 150)


def test_a_pil_image_is_sent_as_png() -> None:
    from PIL import Image

    image = Image.new("RGB", (3, 2), (10, 20, 30))
    media = sent(image)[2]
    assert isinstance(media, BinaryContent) and media.media_type == "image/png"
    assert Image.open(io.BytesIO(media.data)).getpixel((2, 1)) == (10, 20, 30)


def test_a_list_of_images_is_one_attachment_per_item() -> None:
    first, second = png(1, 1, 1), png(2, 2, 2)
    content = sent([first, second])
    assert content[1:] == [
        "Attachment 1 (<photo>):",
        BinaryContent(first, media_type="image/png"),
        "Attachment 2 (<photo>):",
        BinaryContent(second, media_type="image/png"),
    ]
    size = len(first)
    assert locals_line(content, "photo") == (
        f"photo: list = [<attachment 1: image/png, {size} B>, <attachment 2: image/png, {size} B>]"
    )


def test_an_image_in_scope_but_not_named_is_not_sent() -> None:
    named, unnamed = png(0, 255, 0), png(255, 0, 0)

    @nh.natural_function
    def look(photo: bytes) -> None:
        picture = unnamed  # in LOCALS, but the block reads only <photo>
        """natural
        Look at <photo>.
        """

    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        look(named)
    content = prompt_content(script.seen[0])
    assert content[1:] == ["Attachment 1 (<photo>):", BinaryContent(named, media_type="image/png")]
    assert locals_line(content, "picture") == f'picture: bytes = "<image/png, {len(unnamed)} B>"'


def test_map_over_a_column_of_images_sends_one_attachment_per_item(tmp_path: Path) -> None:
    images = [png(index, 0, 0) for index in range(3)]
    paths = []
    for index, image in enumerate(images):
        paths.append(tmp_path / f"{index}.png")
        paths[-1].write_bytes(image)
    executor, script = scripted_executor(*[[finish()] for _ in paths])
    with nh.run(executor):
        nh.map(describe, paths, concurrency=1, progress=False)
    sent_images = sorted(
        item.data for messages in script.seen for item in prompt_content(messages) if isinstance(item, BinaryContent)
    )
    assert sent_images == sorted(images)
    assert all(len(prompt_content(messages)) == 3 for messages in script.seen)


def test_map_over_a_column_of_image_bytes_sends_one_attachment_per_item() -> None:
    images = [png(0, index, 0) for index in range(3)]
    executor, script = scripted_executor(*[[finish()] for _ in images])
    with nh.run(executor):
        nh.map(describe, images, concurrency=1, progress=False)
    sent_images = [prompt_content(messages)[2] for messages in script.seen]
    assert sorted(item.data for item in sent_images) == sorted(images)


def test_sending_bytes_imports_neither_matplotlib_nor_pil(tmp_path: Path) -> None:
    program = """
import sys
import nighthawk as nh
from media_samples import png, prompt_content
from scripting import finish, scripted_executor

@nh.natural_function
def describe(photo):
    '''natural
    Describe <photo>.
    '''

executor, script = scripted_executor([finish()])
with nh.run(executor):
    describe(png())
assert isinstance(prompt_content(script.seen[0]), list), "no media sent"
print(sorted(name for name in ("matplotlib", "PIL", "IPython") if name in sys.modules))
"""
    tests = Path(__file__).resolve().parent.parent
    paths = [*sys.path, str(tests)]
    (script := tmp_path / "send_bytes.py").write_text(program)  # a file: a natural function needs its source
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env={"PYTHONPATH": ":".join(paths)}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_ipython_image_of_a_url_is_sent_as_an_image_url() -> None:
    from IPython.display import Image

    content = sent(Image(url="https://example.com/plot.png"))
    assert content[2] == ImageUrl("https://example.com/plot.png")
    assert locals_line(content, "photo") == "photo: Image = <attachment 1: image/png, https://example.com/plot.png>"
