"""Streamed answers: the model's text reaches the session's clients as it is written, while
someone watches (every test here has a watcher; tests/agents/test_stream_watchers.py has none).

Against an OpenAI-compatible server on loopback that streams (server-sent events) — slowly,
or breaking off mid-answer — through litellm's real streaming path, plus the demo model.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents import loop, streaming
from agents.local_models import ProviderReply
from agents.models import AgentStep
from planboard import broadcast, selectors, services, streams
from planboard.models import AgentRun, ChatSession, Message
from tests.support.local_models import SCRIPTED, install
from tests.support.openai_server import FakeOpenAI
from tests.support.scripted import call, say, tool_calls
from tests.support.sockets import ORIGIN, TIMEOUT, cookie_for, open_socket, receive_until, run
from tests.support.watchers import watch

ANSWER = (
    "Here is what I found:\n\n- **Day 1**: Fushimi Inari early, then Gion.\n"
    "- **Day 2**: Arashiyama bamboo grove and the monkey park.\n\n"
    "| day | area |\n|---|---|\n| 1 | east |\n| 2 | west |\n"
)


@pytest.fixture
def events() -> Iterator[list[tuple[float, dict[str, Any]]]]:
    """Every session event broadcast while the test runs, with the time it left."""
    seen: list[tuple[float, dict[str, Any]]] = []
    unsubscribe = broadcast.subscribe(
        lambda group, event: (
            seen.append((time.monotonic(), event)) if group.startswith("session.") else None
        )
    )
    yield seen
    unsubscribe()


@pytest.fixture(autouse=True)
def _someone_watches(request: pytest.FixtureRequest) -> None:
    """A page has the `session` open (the socket test joins presence over its socket)."""
    if "session" in request.fixturenames:
        watch(request.getfixturevalue("session").pk)


@pytest.fixture(autouse=True)
def _stream_interval(settings: Any) -> None:
    """Pinned (it is also the default): the flood test measures the gaps between deltas."""
    settings.PLANBOARD_STREAM_INTERVAL = 0.05


def start(session: ChatSession, user: Any) -> AgentRun:
    _, agent = services.message_post(session_id=session.pk, author=user, content="Ideas?")
    return agent


def run_cancelling_at_the_first_piece(session: ChatSession, user: Any) -> tuple[AgentRun, float]:
    """Run the agent, cancelling the run when the first piece of its answer reaches clients;
    returns the run and the moment of the cancel."""
    agent = start(session, user)
    cancelled_at: list[float] = []

    def on_event(group: str, event: dict[str, Any]) -> None:
        if event["type"] == "message.delta" and not cancelled_at:
            cancelled_at.append(time.monotonic())
            services.run_cancel(session_id=session.pk)

    unsubscribe = broadcast.subscribe(on_event)
    try:
        agent = loop.execute_run(run_id=agent.pk)
    finally:
        unsubscribe()
    return agent, cancelled_at[0]


def of_type(events: list[tuple[float, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [event for _, event in events if event["type"] == kind]


def stored_answers(session: ChatSession) -> list[Message]:
    return list(Message.objects.filter(session=session, role=Message.Role.ASSISTANT))


@pytest.mark.django_db(transaction=True)  # the stored message is broadcast on commit
def test_deltas_arrive_in_order_before_the_stored_message_and_add_up_to_it(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    openai_server.answer(ANSWER, chunk_delay=0.01)
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    (answer,) = stored_answers(session)
    assert answer.content == ANSWER
    deltas = of_type(events, "message.delta")
    assert len(deltas) >= 2, "the answer was not streamed"
    assert [d["seq"] for d in deltas] == list(range(1, len(deltas) + 1))
    assert "".join(d["text"] for d in deltas) == answer.content
    assert {d["answer_id"] for d in deltas} == {answer.answer_id}
    assert {d["run_id"] for d in deltas} == {agent.pk}
    kinds = [e["type"] for _, e in events]
    final = next(
        i
        for i, (_, e) in enumerate(events)
        if e["type"] == "session.message" and e["message"]["id"] == answer.pk
    )
    assert max(i for i, k in enumerate(kinds) if k == "message.delta") < final
    assert events[final][1]["message"]["answer_id"] == answer.answer_id


def test_a_fast_model_cannot_flood_clients(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    openai_server.answer("word " * 400)  # 286 chunks, as fast as the server can send them
    loop.execute_run(run_id=start(session, user).pk)
    times = [at for at, event in events if event["type"] == "message.delta"]
    # At most one event per 50 ms per answer (the last, flushed at the end, may come sooner).
    gaps = [later - earlier for earlier, later in itertools.pairwise(times[:-1])]
    assert all(gap >= 0.05 for gap in gaps), gaps
    assert "".join(d["text"] for d in of_type(events, "message.delta")) == "word " * 400


def test_a_client_joining_mid_answer_gets_the_partial_text(
    session: ChatSession, user: Any, openai_server: FakeOpenAI
) -> None:
    openai_server.answer(ANSWER, chunk_delay=0.02)
    partials: list[dict[str, Any] | None] = []

    def on_event(group: str, event: dict[str, Any]) -> None:
        if event["type"] == "message.delta" and event["seq"] == 2:
            partials.append(selectors.session_snapshot(session_id=session.pk)["streaming"])

    unsubscribe = broadcast.subscribe(on_event)
    try:
        loop.execute_run(run_id=start(session, user).pk)
    finally:
        unsubscribe()
    (partial,) = partials
    assert partial is not None and partial["text"]
    assert ANSWER.startswith(partial["text"]) and partial["text"] != ANSWER
    # Once the answer is stored, snapshots carry the message instead of a partial answer.
    assert selectors.session_snapshot(session_id=session.pk)["streaming"] is None


def test_cancel_stops_a_streaming_answer_within_a_second(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    openai_server.answer("slow " * 60, chunk_delay=0.5)  # ~22 s if it ran to the end
    agent, cancelled_at = run_cancelling_at_the_first_piece(session, user)
    stopped = time.monotonic()
    assert agent.status == AgentRun.Status.CANCELLED
    assert stored_answers(session) == []
    assert AgentStep.objects.get(run=agent).status == AgentStep.Status.DISCARDED
    # Generous for a loaded machine; the full answer would take over 20 s.
    assert stopped - cancelled_at < 5
    assert selectors.session_snapshot(session_id=session.pk)["streaming"] is None


def test_a_transient_error_mid_stream_restarts_the_answer_cleanly(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    openai_server.answer("A first attempt that breaks off " * 5, break_after=4)
    openai_server.answer(ANSWER)
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    (answer,) = stored_answers(session)
    assert answer.content == ANSWER
    kinds = [e["type"] for _, e in events]
    reset = kinds.index("message.reset")
    before = [e for _, e in events[:reset] if e["type"] == "message.delta"]
    after = [e for _, e in events[reset:] if e["type"] == "message.delta"]
    assert before and "".join(d["text"] for d in after) == ANSWER
    assert len(openai_server.requests) == 2


def test_tool_calls_split_across_chunks_are_assembled(
    session: ChatSession, user: Any, openai_server: FakeOpenAI
) -> None:
    plan_call = call(
        "create_plan",
        call_id="call_split_1",
        name="Kyoto trip",
        description="Three days",
        expected_outcome="An itinerary",
        subtasks=[{"name": "Book hotel"}, {"name": "Plan days"}],
    )
    count_call = call("get_subtask_count", call_id="call_split_2")
    openai_server.answer("Drafting the plan.", calls=[plan_call, count_call])
    openai_server.answer("Done.")
    loop.execute_run(run_id=start(session, user).pk)
    first = stored_answers(session)[0]
    assert first.content == "Drafting the plan."
    assert first.tool_calls == [plan_call, count_call]
    session.refresh_from_db()
    assert session.current_plan is not None and session.current_plan.name == "Kyoto trip"


def test_the_demo_model_streams_its_answers(
    session: ChatSession, user: Any, settings: Any, events: Any
) -> None:
    settings.PLANBOARD_LLM_MODEL = "planboard-demo/offline"
    settings.PLANBOARD_DEMO_STEP_DELAY = 0.2
    settings.PLANBOARD_STREAM_INTERVAL = 0
    _, agent = services.message_post(
        session_id=session.pk, author=user, content="Plan a two-day trip to Kyoto"
    )
    agent = loop.execute_run(run_id=agent.pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    final = [m for m in stored_answers(session) if m.content][-1]
    deltas = [d for d in of_type(events, "message.delta") if d["answer_id"] == final.answer_id]
    assert len(deltas) > 1 and "".join(d["text"] for d in deltas) == final.content


@pytest.mark.django_db(transaction=True)
async def test_a_socket_client_sees_the_answer_being_written(
    user: Any, openai_server: FakeOpenAI, settings: Any
) -> None:
    settings.PLANBOARD_STREAM_INTERVAL = 0
    session = await run(services.session_create, owner=user, need_user_confirm=False)
    socket = await open_socket(f"/ws/sessions/{session.pk}/", ORIGIN, await cookie_for(user))
    snapshot = await socket.receive_json_from(timeout=TIMEOUT)
    assert snapshot["session"]["streaming"] is None
    await socket.send_json_to({"type": "presence.join"})  # as the page does: it watches
    await receive_until(socket, lambda m: m["type"] == "presence")
    openai_server.answer(ANSWER, chunk_delay=0.01)
    agent = await run(start, session, user)
    worker = threading.Thread(target=lambda: loop.execute_run(run_id=agent.pk))
    worker.start()
    seen = await receive_until(
        socket, lambda m: m["type"] == "session.message" and m["message"]["role"] == "assistant"
    )
    worker.join(TIMEOUT)
    deltas = [m for m in seen if m["type"] == "message.delta"]
    assert len(deltas) > 1
    assert "".join(d["text"] for d in deltas) == seen[-1]["message"]["content"] == ANSWER
    await socket.disconnect()


class _SlowLocalModel:
    """An in-process model that writes its answer a word every 0.2 s (12 s in all)."""

    def __init__(self) -> None:
        self.threads_seen: set[str] = set()

    def respond(self, **kwargs: Any) -> ProviderReply:
        return ProviderReply(content="word " * 60)

    def stream(self, **kwargs: Any) -> Iterator[ProviderReply]:
        for _ in range(60):
            self.threads_seen.add(threading.current_thread().name)
            time.sleep(0.2)
            yield ProviderReply(content="word ")


def test_an_in_process_model_streams_on_the_callers_thread_and_stops_on_cancel(
    session: ChatSession, user: Any, settings: Any, events: Any
) -> None:
    model = _SlowLocalModel()
    install(settings, provider="slowlocal", slot=SCRIPTED, model=model)
    settings.PLANBOARD_LLM_MODEL = "slowlocal/words"
    agent, cancelled_at = run_cancelling_at_the_first_piece(session, user)
    assert agent.status == AgentRun.Status.CANCELLED
    assert stored_answers(session) == []
    # The stop request is checked between words: well before the answer's 12 s.
    assert time.monotonic() - cancelled_at < 5
    # No helper thread: the model wrote every word on the thread driving the run.
    assert model.threads_seen == {threading.current_thread().name}


def test_an_answer_that_only_calls_tools_leaves_the_partial_answer_store_alone(
    session: ChatSession, user: Any, monkeypatch: pytest.MonkeyPatch, scripted_model: Any
) -> None:
    ended: list[int] = []
    real = streams.answer_ended
    monkeypatch.setattr(streams, "answer_ended", lambda **kw: ended.append(1) or real(**kw))
    scripted_model.script.extend(
        [tool_calls(call("view_historical_plans")), say("No earlier plans.")]
    )
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    # The scripted model answers in one piece: nothing was streamed, nothing to clear.
    assert ended == []
    assert selectors.session_snapshot(session_id=session.pk)["streaming"] is None


def test_a_hosted_models_pieces_reach_the_lane_once_per_interval() -> None:
    """One thread hop per interval, not per piece (a hosted model writes a piece per token);
    everything held is handed over in order, and a retried answer drops what was held."""
    clock = iter(x * 0.01 for x in itertools.count(10))  # each piece 10 ms after the last
    answer = streaming.AnswerStream(run=AgentRun(pk=1, session_id=2), answer_id="r1s1")
    posted: list[tuple[Any, tuple[Any, ...]]] = []
    pieces = streaming.HeldPieces(
        answer, lambda fn, *args: posted.append((fn, args)), clock=lambda: next(clock)
    )
    for n in range(20):
        pieces.add(f"{n} ")
    assert 2 <= len(posted) <= 5  # 20 pieces over 200 ms, 50 ms apart at least
    handed = "".join(args[0] for _, args in posted)
    assert handed and "".join(f"{n} " for n in range(20)).startswith(handed)  # in order
    pieces.reset()  # the answer is asked for again: what is held is dropped
    assert posted[-1] == (answer.reset, ())
    pieces.add("again ")
    pieces.hand_over()  # before the stored answer, what is held goes
    pieces.hand_over()  # nothing held: nothing posted
    assert posted[-2:] == [(answer.reset, ()), (answer.add, ("again ",))]
