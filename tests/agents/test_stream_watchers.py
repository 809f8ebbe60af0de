"""Answers are streamed only to watchers: before each model call the step reads the session's
presence once; nobody there, a hosted model is asked for its answer in one piece (litellm's
real HTTP path against the loopback OpenAI-compatible server, which records each request's
`stream` flag), and the stored message is all clients get. Someone who opens the session
mid-answer sees the answer once it is stored; the next step streams to them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents import loop
from agents.local_models import ProviderReply
from agents.models import AgentStep
from planboard import broadcast, presence, selectors, services
from planboard.models import AgentRun, ChatSession, Message
from tests.support.local_models import SCRIPTED, install
from tests.support.openai_server import FakeOpenAI
from tests.support.scripted import call
from tests.support.sockets import ORIGIN, TIMEOUT, cookie_for, open_socket, receive_until, run
from tests.support.watchers import watch

ANSWER = "Day 1: Fushimi Inari early, then Gion. Day 2: Arashiyama and the monkey park."


@pytest.fixture
def events() -> Iterator[list[dict[str, Any]]]:
    """Every session event broadcast while the test runs."""
    seen: list[dict[str, Any]] = []
    unsubscribe = broadcast.subscribe(
        lambda group, event: seen.append(dict(event)) if group.startswith("session.") else None
    )
    yield seen
    unsubscribe()


@pytest.fixture(autouse=True)
def _stream_interval(settings: Any) -> None:
    settings.PLANBOARD_STREAM_INTERVAL = 0  # every piece would leave as a delta


class CountingStore(presence.MemoryPresenceStore):
    """The process's presence, counting what the worker asks of it."""

    def __init__(self) -> None:
        super().__init__()
        self.watched_asked: list[int] = []
        self.people_asked = 0

    async def watched(self, session_id: int) -> bool:
        self.watched_asked.append(session_id)
        return await super().watched(session_id)

    async def people(self, session_id: int) -> list[presence.Presence]:
        self.people_asked += 1
        return await super().people(session_id)


class BrokenStore(presence.MemoryPresenceStore):
    async def watched(self, session_id: int) -> bool:
        raise ConnectionError("presence store away")


def start(session: ChatSession, user: Any) -> AgentRun:
    _, agent = services.message_post(session_id=session.pk, author=user, content="Ideas?")
    return agent


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def streamed_flags(server: FakeOpenAI) -> list[bool]:
    return [bool(request["body"].get("stream")) for request in server.requests]


@pytest.mark.django_db(transaction=True)  # the stored message is broadcast on commit
def test_nobody_watching_the_answer_comes_in_one_piece_and_is_broadcast_once(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    openai_server.answer(ANSWER)
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    assert streamed_flags(openai_server) == [False]
    (answer,) = Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
    assert answer.content == ANSWER
    assert of_type(events, "message.delta") == []
    stored = [e for e in of_type(events, "session.message") if e["message"]["id"] == answer.pk]
    assert len(stored) == 1 and stored[0]["message"]["content"] == ANSWER
    assert selectors.session_snapshot(session_id=session.pk)["streaming"] is None


@pytest.mark.django_db(transaction=True)
def test_a_watcher_gets_the_answer_in_pieces(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    watch(session.pk)
    openai_server.answer(ANSWER)
    loop.execute_run(run_id=start(session, user).pk)
    assert streamed_flags(openai_server) == [True]
    deltas = of_type(events, "message.delta")
    assert len(deltas) > 1 and "".join(d["text"] for d in deltas) == ANSWER
    (answer,) = Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
    stored = [e for e in of_type(events, "session.message") if e["message"]["id"] == answer.pk]
    assert len(stored) == 1
    assert events.index(stored[0]) > max(i for i, e in enumerate(events) if e in deltas)


def test_a_watcher_on_another_session_or_one_that_expired_does_not_count(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    now = [1000.0]
    presence.set_store(presence.MemoryPresenceStore(ttl=lambda: 30, clock=lambda: now[0]))
    other = services.session_create(owner=user)
    watch(other.pk)
    watch(session.pk)
    now[0] += 31  # the page stopped sending heartbeats
    watch(other.pk)
    openai_server.answer(ANSWER)
    loop.execute_run(run_id=start(session, user).pk)
    assert streamed_flags(openai_server) == [False]
    assert of_type(events, "message.delta") == []


def test_presence_is_read_once_per_step_and_never_listed(
    session: ChatSession, user: Any, openai_server: FakeOpenAI
) -> None:
    store = CountingStore()
    presence.set_store(store)
    openai_server.answer("Looking.", calls=[call("view_historical_plans", call_id="call_w1")])
    openai_server.answer("Nothing earlier.", calls=[call("get_subtask_count", call_id="call_w2")])
    openai_server.answer(ANSWER)
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    steps = AgentStep.objects.filter(run=agent).count()
    assert steps == 3
    assert store.watched_asked == [session.pk] * steps
    assert store.people_asked == 0


def test_unreadable_presence_streams_as_before(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any
) -> None:
    presence.set_store(BrokenStore())
    openai_server.answer(ANSWER)
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.SUCCEEDED
    assert streamed_flags(openai_server) == [True]
    assert "".join(d["text"] for d in of_type(events, "message.delta")) == ANSWER


def test_the_setting_streams_every_answer_without_asking_presence(
    session: ChatSession, user: Any, openai_server: FakeOpenAI, events: Any, settings: Any
) -> None:
    settings.PLANBOARD_STREAM_UNWATCHED = True
    store = CountingStore()
    presence.set_store(store)
    openai_server.answer(ANSWER)
    loop.execute_run(run_id=start(session, user).pk)
    assert streamed_flags(openai_server) == [True]
    assert "".join(d["text"] for d in of_type(events, "message.delta")) == ANSWER
    assert store.watched_asked == []


class _CancellingLocalModel:
    """An in-process model that writes a word every 0.1 s (6 s in all); the run is cancelled
    when it writes its first word."""

    def __init__(self, session_id: int) -> None:
        self.session_id = session_id
        self.cancelled_at: float | None = None

    def respond(self, **kwargs: Any) -> ProviderReply:
        return ProviderReply(content="word " * 60)

    def stream(self, **kwargs: Any) -> Iterator[ProviderReply]:
        for _ in range(60):
            if self.cancelled_at is None:
                services.run_cancel(session_id=self.session_id)
                self.cancelled_at = time.monotonic()
            time.sleep(0.1)
            yield ProviderReply(content="word ")


def test_an_unwatched_in_process_model_sends_no_pieces_and_still_hears_a_cancel(
    session: ChatSession, user: Any, settings: Any, events: Any
) -> None:
    model = _CancellingLocalModel(session.pk)
    install(settings, provider="cancellocal", slot=SCRIPTED, model=model)
    settings.PLANBOARD_LLM_MODEL = "cancellocal/words"
    agent = loop.execute_run(run_id=start(session, user).pk)
    assert agent.status == AgentRun.Status.CANCELLED
    assert model.cancelled_at is not None and time.monotonic() - model.cancelled_at < 5
    assert of_type(events, "message.delta") == []
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()


@pytest.mark.django_db(transaction=True)  # the worker thread commits; the socket reads it
async def test_a_watcher_arriving_mid_answer_sees_it_stored_and_the_next_step_streamed(
    user: Any, openai_server: FakeOpenAI
) -> None:
    session = await run(services.session_create, owner=user, need_user_confirm=False)
    socket = await open_socket(f"/ws/sessions/{session.pk}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)  # the snapshot; not joined yet
    asked, release = threading.Event(), threading.Event()

    def hold_the_first_answer(body: dict[str, Any]) -> None:
        if not asked.is_set():
            asked.set()
            release.wait(TIMEOUT)

    openai_server.on_request = hold_the_first_answer
    openai_server.answer("Looking first.", calls=[call("view_historical_plans", call_id="c_m1")])
    openai_server.answer(ANSWER)
    agent = await run(start, session, user)
    worker = threading.Thread(target=lambda: loop.execute_run(run_id=agent.pk))
    worker.start()
    try:
        assert await asyncio.to_thread(asked.wait, TIMEOUT)  # the model is answering
        await socket.send_json_to({"type": "presence.join"})  # the page opens now
        await receive_until(socket, lambda m: m["type"] == "presence")
    finally:
        release.set()
    seen = await receive_until(
        socket,
        lambda m: m["type"] == "session.message" and m["message"]["content"] == ANSWER,
    )
    await asyncio.to_thread(worker.join, TIMEOUT)
    assert streamed_flags(openai_server) == [False, True]
    first = next(
        m["message"]
        for m in seen
        if m["type"] == "session.message" and m["message"]["content"] == "Looking first."
    )
    deltas = [m for m in seen if m["type"] == "message.delta"]
    assert [d for d in deltas if d["answer_id"] == first["answer_id"]] == []
    assert "".join(d["text"] for d in deltas) == ANSWER
    assert {d["answer_id"] for d in deltas} == {seen[-1]["message"]["answer_id"]}
    await socket.disconnect()
