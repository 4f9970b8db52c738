"""`nh_eval` of an expression yielding an image hands the image back to the model."""

from __future__ import annotations

import struct

from pydantic_ai.messages import BinaryContent, ModelMessage, ToolReturnPart

import nighthawk as nh
from media_samples import png
from scripting import call, finish, scripted_executor


def tool_return(messages: list[ModelMessage]) -> ToolReturnPart:
    (part,) = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    return part


@nh.natural_function
def inspect_chart(chart: object) -> None:
    """natural
    Look at the chart again with nh_eval: <chart>.
    """


def test_nh_eval_of_a_figure_returns_the_rendered_png_after_the_envelope() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(1, 1))
    plt.plot([1, 2, 3])
    executor, script = scripted_executor([call("nh_eval", expression="plt.gcf()")], [finish()])
    namespace_owner = {"plt": plt}

    @nh.natural_function
    def draw_and_look() -> None:
        plt = namespace_owner["plt"]
        """natural
        Plot the data, then look at the plot with nh_eval.
        """

    with nh.run(executor):
        draw_and_look()
    plt.close(figure)
    envelope, media = tool_return(script.seen[1]).content
    assert envelope == '{"value": "<Figure size 100x100 with 1 Axes>", "error": null}'
    assert isinstance(media, BinaryContent) and media.media_type == "image/png"
    assert struct.unpack(">II", media.data[16:24]) == (100, 100)


def test_nh_eval_of_image_bytes_returns_them_as_media() -> None:
    image = png()
    executor, script = scripted_executor([call("nh_eval", expression="picture")], [finish()])

    @nh.natural_function
    def look(words: str) -> None:
        picture = image
        """natural
        Read <words>.
        """

    with nh.run(executor):
        look("hi")
    content = tool_return(script.seen[1]).content
    assert content[1] == BinaryContent(image, media_type="image/png")


def test_nh_eval_of_plain_data_returns_the_envelope_alone() -> None:
    executor, script = scripted_executor([call("nh_eval", expression="words.upper()")], [finish()])

    @nh.natural_function
    def shout(words: str) -> None:
        """natural
        Read <words>.
        """

    with nh.run(executor):
        shout("hi")
    assert tool_return(script.seen[1]).content == '{"value": "HI", "error": null}'
