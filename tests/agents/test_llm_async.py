"""`llm.acomplete`, the model call of the run host: the same answers, retries and errors as
`llm.complete`, awaited on an event loop; 429s wait as long as the server asks; a run's
control ends a wait on the model at once (cancel, hand-off)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agents import llm
from agents.runtime.control import HandedOff, ModelSlots, RunControl
from tests.support.openai_server import FakeOpenAI
from tests.support.paced_model import PacedOpenAI

MESSAGES = [{"role": "user", "content": "Plan it [run:t1]"}]


@pytest.fixture
def paced(settings: Any) -> Iterator[PacedOpenAI]:
    server = PacedOpenAI(delay=0.0, answers=1).start()
    settings.PLANBOARD_LLM_MODEL = "openai/paced-model"
    settings.PLANBOARD_LLM_API_BASE = server.base_url
    settings.PLANBOARD_LLM_API_KEY = "sk-test"
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    settings.PLANBOARD_LLM_TIMEOUT = 20
    yield server
    server.stop()


def listener(pieces: list[str]) -> llm.StreamListener:
    return llm.StreamListener(on_text=pieces.append, on_reset=pieces.clear)


def test_acomplete_streams_the_same_answer_as_complete(openai_server: FakeOpenAI) -> None:
    calls = [
        {
            "id": "call_a1",
            "type": "function",
            "function": {"name": "get_subtask_count", "arguments": "{}"},
        }
    ]
    openai_server.answer("Counting the subtasks.", calls=calls)
    openai_server.answer("Counting the subtasks.", calls=calls)
    pieces: list[str] = []
    awaited = asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener(pieces)))
    called = llm.complete(messages=MESSAGES, listener=listener([]))
    assert "".join(pieces) == "Counting the subtasks."
    for field in ("content", "tool_calls", "prompt_tokens", "completion_tokens", "attempts"):
        assert getattr(awaited, field) == getattr(called, field)
    assert awaited.tool_calls == calls
    assert all(r["body"]["stream"] for r in openai_server.requests)


def test_acomplete_turns_a_refusal_into_a_readable_error(openai_server: FakeOpenAI) -> None:
    openai_server.fail(401, "bad key")
    with pytest.raises(llm.LLMError) as error:
        asyncio.run(llm.acomplete(messages=MESSAGES))
    assert error.value.attempts == 1 and not error.value.transient
    assert "refused" in error.value.message


def test_the_paced_model_tells_a_caller_in_another_process_what_it_counted(
    paced: PacedOpenAI,
) -> None:
    # bench/run_concurrency.py runs the server in a process of its own and reads this.
    before = time.time()
    asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener([])))
    with urllib.request.urlopen(f"{paced.base_url}/stats", timeout=10) as response:
        stats = json.load(response)
    assert stats["requests"] == 1 and stats["max_in_flight"] == 1 and stats["refused"] == 0
    assert set(stats["first_seen"]) == {"t1"} and stats["first_seen"]["t1"] >= before


@pytest.mark.parametrize("streamed", [False, True])
def test_a_429_is_retried_after_the_wait_the_server_asks_for(
    paced: PacedOpenAI, streamed: bool
) -> None:
    paced.rate_limited = 1
    paced.retry_after = "1"
    started = time.monotonic()
    result = asyncio.run(
        llm.acomplete(messages=MESSAGES, listener=listener([]) if streamed else None)
    )
    # The configured backoff is 0 s: only the server's Retry-After makes it wait.
    assert time.monotonic() - started >= 1.0
    assert result.attempts == 2 and result.content == "Done after 1 answers."
    assert paced.refused == 1 and paced.requests == 2


def test_the_synchronous_call_honours_retry_after_too(paced: PacedOpenAI) -> None:
    paced.rate_limited = 1
    paced.retry_after = "1"
    waits: list[float] = []
    result = llm.complete(messages=MESSAGES, sleep=waits.append)
    assert waits == [1.0] and result.attempts == 2


def test_429s_past_the_last_attempt_fail_the_call(paced: PacedOpenAI, settings: Any) -> None:
    settings.PLANBOARD_LLM_ATTEMPTS = 2
    paced.rate_limited = 5
    paced.retry_after = "0"
    with pytest.raises(llm.LLMError) as error:
        asyncio.run(llm.acomplete(messages=MESSAGES))
    assert error.value.transient and error.value.attempts == 2
    assert "RateLimitError" in error.value.message


@pytest.mark.parametrize("how", ["cancel", "hand_off"])
def test_the_run_control_ends_a_wait_on_the_model_at_once(paced: PacedOpenAI, how: str) -> None:
    paced.delay = 300.0  # the answer is five minutes away

    async def scenario() -> None:
        control = RunControl(run_id=1)
        waiting = asyncio.ensure_future(control.watch(llm.acomplete(messages=MESSAGES)))
        while "t1" not in paced.first_seen:
            await asyncio.sleep(0.02)
        getattr(control, how)()
        await asyncio.wait_for(waiting, timeout=30)  # generous: only stops a hang

    expected = llm.LLMCancelled if how == "cancel" else HandedOff
    with pytest.raises(expected):
        asyncio.run(scenario())


def test_model_slots_bound_the_requests_in_flight_per_model(paced: PacedOpenAI, settings: Any):
    settings.PLANBOARD_MODEL_CONCURRENCY = 2
    paced.delay = 0.3

    async def scenario() -> None:
        slots = ModelSlots()

        async def ask() -> None:
            async with slots("openai/paced-model"):
                await llm.acomplete(messages=MESSAGES)

        await asyncio.gather(*(ask() for _ in range(6)))

    asyncio.run(scenario())
    assert paced.requests == 6 and paced.max_in_flight == 2


class StreamEnds:
    """Counts litellm's own end-of-stream work: joining the streamed answer again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import litellm  # noqa: TID251 - the test watches what litellm does at a stream's end

        self.joined = 0
        builder = litellm.stream_chunk_builder

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.joined += 1
            return builder(*args, **kwargs)

        monkeypatch.setattr(litellm, "stream_chunk_builder", counted)


@pytest.mark.parametrize("usage", ["last", "with-finish"])
def test_a_streamed_answer_takes_its_usage_without_litellms_end_of_stream(
    openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, usage: str
) -> None:
    """litellm would join the answer again, price it and call success handlers once the
    stream ends; nobody reads that here (benchmark 8: a quarter of a step), so the usage is
    read from the rest of the stream, or from the chunk litellm held it in."""
    ends = StreamEnds(monkeypatch)
    openai_server.stream_usage = usage
    for _ in range(2):
        openai_server.answer("All four counted.")
    pieces: list[str] = []
    for _ in range(2):
        result = asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener(pieces)))
        assert (result.content, result.finish_reason) == ("All four counted.", "stop")
        assert (result.prompt_tokens, result.completion_tokens) == (1000, 100)
    assert "".join(pieces) == "All four counted." * 2
    assert ends.joined == 0


def test_an_answer_streamed_without_usage_still_counts_its_tokens(
    openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that sends no usage: litellm's end of the stream estimates it."""
    StreamEnds(monkeypatch)
    openai_server.stream_usage = "none"
    openai_server.answer("All four counted.")
    result = asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener([])))
    assert result.content == "All four counted."
    assert result.prompt_tokens > 0 and result.completion_tokens > 0


def test_a_connection_lost_after_the_finish_keeps_the_whole_answer(
    openai_server: FakeOpenAI,
) -> None:
    """The server hangs up after the finish, before the usage: the answer is whole, so it is
    kept (its tokens estimated by litellm), not asked for again."""
    openai_server.answer("All four counted.", break_after=5)  # role, 3 pieces, the finish
    result = asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener([])))
    assert (result.content, result.finish_reason) == ("All four counted.", "stop")
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert len(openai_server.requests) == 1


def test_litellms_end_of_stream_runs_when_a_callback_reads_it(
    openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator's litellm callback (an observability integration) still hears of every
    streamed answer."""
    import litellm  # noqa: TID251 - registers a litellm callback, as an operator would
    from litellm.integrations.custom_logger import CustomLogger  # noqa: TID251

    heard: list[Any] = []

    class Heard(CustomLogger):  # type: ignore[misc]
        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            heard.append(response_obj)

    ends = StreamEnds(monkeypatch)
    monkeypatch.setattr(litellm, "callbacks", [Heard()])
    openai_server.answer("All four counted.")

    async def call_and_wait() -> llm.LLMResult:
        result = await llm.acomplete(messages=MESSAGES, listener=listener([]))
        for _ in range(100):  # the handlers run as tasks of their own
            if heard:
                break
            await asyncio.sleep(0.05)
        return result

    result = asyncio.run(call_and_wait())
    assert (result.prompt_tokens, result.completion_tokens) == (1000, 100)
    assert ends.joined >= 1
    assert len(heard) == 1


def test_the_paced_model_can_write_an_answer_as_long_as_a_real_one(settings: Any) -> None:
    """The benchmarks' long answer (`final_words`): streamed piece by piece, whole at the end."""
    server = PacedOpenAI(delay=0.0, answers=1, final_words=40).start()
    settings.PLANBOARD_LLM_MODEL = "openai/paced-model"
    settings.PLANBOARD_LLM_API_BASE = server.base_url
    settings.PLANBOARD_LLM_API_KEY = "sk-test"
    try:
        pieces: list[str] = []
        result = asyncio.run(llm.acomplete(messages=MESSAGES, listener=listener(pieces)))
    finally:
        server.stop()
    assert result.content == "Done after 1 answers." + " Details." * 40
    assert "".join(pieces) == result.content
    assert len(pieces) == -(-len(result.content) // 7)  # 7 characters a piece
