"""How many images and documents a step may attach, and what a provider refusing them says."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from media_samples import png
from scripting import scripted_executor


@nh.natural_function
def compare(first: object, second: object) -> None:
    """natural
    Compare <first> with <second>.
    """


def limited(**limits: int) -> tuple[nh.AgentStepExecutor, object]:
    return scripted_executor(context_limits=nh.StepContextLimits(**limits))


def test_more_attachments_than_media_max_items_fail_before_any_request() -> None:
    executor, script = limited(media_max_items=2)
    with nh.run(executor), pytest.raises(
        nh.NighthawkError, match=r"attaches 3 images or documents \(<first>, <second>\), over `StepContextLimits.media_max_items` \(2\)"
    ):
        compare([png(), png()], png())
    assert script.requests == 0


def test_more_bytes_than_media_max_bytes_fail_before_any_request() -> None:
    image = png(size=8)
    executor, script = limited(media_max_bytes=len(image) + 10)
    with nh.run(executor), pytest.raises(
        nh.NighthawkError, match=rf"attaches {2 * len(image)} bytes .* over `StepContextLimits.media_max_bytes` \({len(image) + 10}\)"
    ):
        compare(image, image)
    assert script.requests == 0


def test_a_file_over_media_max_bytes_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(png(size=64))
    executor, _ = limited(media_max_bytes=100)
    with nh.run(executor), pytest.raises(
        nh.NighthawkError, match=r"`<first>` is the file '.*big.png' of \d+ bytes, over `StepContextLimits.media_max_bytes` \(100\)"
    ):
        compare(path, "text")


def test_media_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"`StepContextLimits.media_max_items` must be a positive int, got 0"):
        nh.StepContextLimits(media_max_items=0)


def refusing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise ModelHTTPError(
        400, "text-only", body={"error": {"message": "Invalid content type. image_url is only supported by certain models."}}
    )


def test_a_provider_refusing_media_names_the_binding_and_the_model() -> None:
    configuration = nh.StepExecutorConfiguration(model=FunctionModel(refusing, model_name="text-only"))
    executor = nh.AgentStepExecutor.from_configuration(configuration=configuration)
    with nh.run(executor), pytest.raises(
        nh.ExecutionError,
        match=r"^the model 'function:text-only' refused the image or document sent for `<first>` \(.*image_url is only "
        r"supported by certain models.*\); choose a model that reads images and documents",
    ):
        compare(png(), "text")


def test_a_figure_that_cannot_draw_itself_names_the_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no renderer")

    figure = Figure()
    monkeypatch.setattr(figure, "savefig", broken)
    executor, script = scripted_executor()
    with nh.run(executor), pytest.raises(
        nh.NighthawkError, match=r"^`<first>` \(Figure\) could not be drawn as a PNG: RuntimeError: no renderer$"
    ):
        compare(figure, "text")
    assert script.requests == 0


def unsupported(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    from pydantic_ai.exceptions import UserError

    raise UserError("Unsupported binary content media type for this model: 'application/pdf'")


def test_a_model_class_refusing_a_media_type_names_the_binding_and_the_model() -> None:
    configuration = nh.StepExecutorConfiguration(model=FunctionModel(unsupported, model_name="no-pdf"))
    executor = nh.AgentStepExecutor.from_configuration(configuration=configuration)
    with nh.run(executor), pytest.raises(
        nh.ExecutionError, match=r"^the model 'function:no-pdf' refused the image or document sent for `<second>` \("
    ):
        compare("text", b"%PDF-1.4\n%%EOF\n")
