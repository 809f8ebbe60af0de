"""The model call over HTTP through either transport litellm offers for OpenAI-compatible
servers: its own HTTP handler (the default) and the OpenAI SDK (`PLANBOARD_LLM_OPENAI_SDK`).
Both must give the same answers, usage, error classes and retries, streamed or not, awaited
or not."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agents import llm
from tests.support.openai_server import FakeOpenAI
from tests.support.paced_model import PacedOpenAI

MESSAGES = [{"role": "user", "content": "Count the subtasks [run:h1]"}]
CALLS = [
    {
        "id": "call_h1",
        "type": "function",
        "function": {"name": "get_subtask_count", "arguments": '{"plan": "now"}'},
    }
]


@pytest.fixture(params=["litellm-http", "openai-sdk"])
def transport(request: pytest.FixtureRequest, settings: Any) -> str:
    settings.PLANBOARD_LLM_OPENAI_SDK = request.param == "openai-sdk"
    return str(request.param)


def header(server: FakeOpenAI, name: str) -> str:
    sent = {key.lower(): value for key, value in server.requests[-1]["headers"].items()}
    return str(sent.get(name.lower(), ""))


def sent_by_the_sdk(server: FakeOpenAI) -> bool:
    return "OpenAI/Python" in header(server, "User-Agent")


def call(*, stream: bool, awaited: bool, pieces: list[str] | None = None) -> llm.LLMResult:
    listener = (
        llm.StreamListener(on_text=(pieces if pieces is not None else []).append)
        if stream
        else None
    )
    if awaited:
        return asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener))
    return llm.complete(messages=MESSAGES, listener=listener)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("awaited", [True, False], ids=["acomplete", "complete"])
def test_the_answer_its_tool_calls_and_usage_arrive_whole(
    openai_server: FakeOpenAI, transport: str, stream: bool, awaited: bool
) -> None:
    openai_server.answer("Counting the subtasks now.", calls=CALLS)
    pieces: list[str] = []
    result = call(stream=stream, awaited=awaited, pieces=pieces)
    assert result.content == "Counting the subtasks now."
    assert result.tool_calls == CALLS
    assert (result.prompt_tokens, result.completion_tokens) == (1000, 100)
    assert result.finish_reason == "tool_calls"
    if stream:
        assert "".join(pieces) == "Counting the subtasks now."
    sent = openai_server.requests[-1]
    assert header(openai_server, "Authorization") == "Bearer sk-test-123"
    assert sent["body"]["messages"] == MESSAGES
    assert bool(sent["body"].get("stream")) is stream
    assert sent_by_the_sdk(openai_server) is (transport == "openai-sdk")


@pytest.mark.parametrize("awaited", [True, False], ids=["acomplete", "complete"])
def test_a_refused_key_is_final_and_says_why(
    openai_server: FakeOpenAI, transport: str, awaited: bool
) -> None:
    openai_server.fail(401, "Incorrect API key provided")
    with pytest.raises(llm.LLMError) as error:
        call(stream=True, awaited=awaited)
    assert not error.value.transient
    assert "Incorrect API key provided" in str(error.value)
    assert len(openai_server.requests) == 1  # not retried


@pytest.mark.parametrize("awaited", [True, False], ids=["acomplete", "complete"])
def test_a_request_too_long_for_the_model_is_a_context_error(
    openai_server: FakeOpenAI, transport: str, awaited: bool
) -> None:
    openai_server.reply(
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        status=400,
    )
    with pytest.raises(llm.LLMError) as error:
        call(stream=True, awaited=awaited)
    assert error.value.context_exceeded
    assert not error.value.transient


@pytest.mark.parametrize("awaited", [True, False], ids=["acomplete", "complete"])
def test_a_server_error_is_retried_and_the_next_attempt_answers(
    openai_server: FakeOpenAI, transport: str, awaited: bool
) -> None:
    openai_server.fail(503, "overloaded")
    openai_server.answer("Back again.")
    result = call(stream=True, awaited=awaited)
    assert result.content == "Back again."
    assert result.attempts == 2


@pytest.mark.parametrize("awaited", [True, False], ids=["acomplete", "complete"])
def test_a_429_waits_as_long_as_the_server_asks(
    settings: Any, transport: str, awaited: bool
) -> None:
    server = PacedOpenAI(delay=0.0, answers=1).start()
    try:
        settings.PLANBOARD_LLM_MODEL = "openai/paced-model"
        settings.PLANBOARD_LLM_API_BASE = server.base_url
        settings.PLANBOARD_LLM_API_KEY = "sk-test"
        settings.PLANBOARD_LLM_RETRY_DELAY = 0
        server.rate_limited, server.retry_after = 1, "1"
        started = time.monotonic()
        result = call(stream=True, awaited=awaited)
        assert time.monotonic() - started >= 1.0  # the backoff alone would be 0 s
        assert result.attempts == 2
        assert server.refused == 1
    finally:
        server.stop()


def test_a_hosted_model_litellm_cannot_price_is_told_once_and_stays_unpriced(
    openai_server: FakeOpenAI,
) -> None:
    """litellm looks a model missing from its price list up under many spellings on every
    call; it is told a zero once instead, and Planboard still knows no price for the model
    (no cost counted, dollar budgets refuse it). A listed model keeps its list price."""
    model = "openai/house-model-7"
    openai_server.answer("Hi.")
    listener = llm.StreamListener(on_text=lambda _text: None)
    result = asyncio.run(llm.acomplete(messages=MESSAGES, model=model, listener=listener))
    assert result.content == "Hi." and result.cost_usd == 0.0
    assert llm.litellm.model_cost[model]["input_cost_per_token"] == 0.0
    assert llm.known_prices(model) is None
    listed = llm.known_prices("openai/gpt-4o-mini")
    assert listed is not None and listed.input_per_token > 0
