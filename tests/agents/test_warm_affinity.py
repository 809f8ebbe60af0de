"""Warm-host affinity (agents/runtime/affinity.py): a run is offered first to the run host
where its conversation's MCP sessions are open, over that host's Redis channel; with nobody
listening (or no Redis broker) it goes through Celery at once; the host that hears an offer
takes the run like `run_agent` does, or sends it through Celery when it cannot; per-user
admission still decides which runs are dispatched at all.

The end-to-end test with real workers is tests/system/test_warm_host.py."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.utils import timezone

from agents import sweeper, tasks
from agents.mcp import sessions
from agents.runtime import affinity
from agents.runtime.host import RunHost
from agents.runtime.lanes import CallerLane
from planboard import services
from planboard.models import AgentRun, ChatSession
from tests.support.processes import own_redis_db, wait_for


@pytest.fixture
def broker(redis_url: str, settings: Any) -> str:
    """The test's own Redis database as Celery's broker (as a deployment with Redis)."""
    url = own_redis_db(redis_url, int(redis_url.rsplit("/", 1)[1] or 0))
    settings.CELERY_BROKER_URL = url
    settings.PLANBOARD_RUN_DISPATCHER = "agents.tasks.dispatch_run"
    return url


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Runs sent through Celery (instead of a broker message)."""
    ids: list[int] = []
    monkeypatch.setattr(tasks, "send_to_any_worker", ids.append)
    return ids


class ListeningHost:
    """A `Listener` on a loop of its own, as a run host has one: records the offers it hears."""

    def __init__(self, url: str, worker: str = "warm-host:1:abc") -> None:
        self.heard: list[tuple[int, int]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

        async def take(run_id: int, session_id: int) -> None:
            self.heard.append((run_id, session_id))

        self.listener = affinity.Listener(worker=worker, url=url, take=take)
        self.task: concurrent.futures.Future[None] | None = None

    def __enter__(self) -> ListeningHost:
        self.thread.start()
        self.task = asyncio.run_coroutine_threadsafe(self.listener.listen(), self.loop)
        wait_for(lambda: self.listener.subscribed.is_set(), timeout=10, what="the subscription")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
        asyncio.run_coroutine_threadsafe(self.listener.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def serve(self, session_id: int) -> None:
        """A tool call of `session_id` was served here."""
        self.loop.call_soon_threadsafe(self.listener.served, session_id)


def post(session: ChatSession, user: Any, text: str = "Go on") -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return run


# --- the dispatching side ---------------------------------------------------------------------


def test_without_a_redis_broker_every_run_goes_through_celery(
    session: ChatSession, user: Any, settings: Any, sent: list[int]
) -> None:
    settings.CELERY_BROKER_URL = "memory://"  # embedded mode
    run = post(session, user)
    assert affinity.redis_url() == ""
    assert affinity.offer(run.pk) is False
    tasks.dispatch_run(run.pk)
    assert sent == [run.pk]


def test_a_warm_host_nobody_listens_for_leaves_the_run_to_celery_at_once(
    session: ChatSession, user: Any, broker: str, sent: list[int]
) -> None:
    run = post(session, user)
    # Recorded by a host that has died since: its channel has no subscriber.
    redis.Redis.from_url(broker).set(affinity.warm_key(session.pk), "gone:1:dead", ex=60)
    started = time.monotonic()
    tasks.dispatch_run(run.pk)
    assert sent == [run.pk]
    assert time.monotonic() - started < 1


def test_a_run_of_a_conversation_warm_nowhere_goes_through_celery(
    session: ChatSession, user: Any, broker: str, sent: list[int]
) -> None:
    run = post(session, user)
    with ListeningHost(broker) as host:
        tasks.dispatch_run(run.pk)
    assert sent == [run.pk] and host.heard == []


def test_a_listening_warm_host_is_offered_the_run_and_celery_is_not_used(
    session: ChatSession, user: Any, broker: str, sent: list[int], settings: Any
) -> None:
    settings.PLANBOARD_MCP_SESSION_IDLE_SECONDS = 120
    run = post(session, user)
    client = redis.Redis.from_url(broker)
    with ListeningHost(broker) as host:
        host.serve(session.pk)
        wait_for(lambda: client.get(affinity.warm_key(session.pk)), timeout=5, what="the record")
        assert client.get(affinity.warm_key(session.pk)) == b"warm-host:1:abc"
        # The record lives as long as an idle session does.
        assert 100 < client.ttl(affinity.warm_key(session.pk)) <= 120
        tasks.dispatch_run(run.pk)
        wait_for(lambda: host.heard, timeout=5, what="the offer")
    assert host.heard == [(run.pk, session.pk)]
    assert sent == []


def test_a_post_hands_the_dispatcher_its_session_so_the_offer_reads_no_row(
    session: ChatSession,
    user: Any,
    broker: str,
    sent: list[int],
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    django_assert_num_queries: Any,
) -> None:
    # The run's session used to be read back first: a tenth of a post's CPU.
    settings.PLANBOARD_MCP_SESSION_IDLE_SECONDS = 120
    client = redis.Redis.from_url(broker)
    with ListeningHost(broker) as host:
        host.serve(session.pk)
        wait_for(lambda: client.get(affinity.warm_key(session.pk)), timeout=5, what="the record")
        with django_capture_on_commit_callbacks() as dispatches:
            run = post(session, user)
        with django_assert_num_queries(0):
            for dispatch in dispatches:
                dispatch()
        wait_for(lambda: host.heard, timeout=5, what="the offer")
    assert host.heard == [(run.pk, session.pk)] and sent == []


def test_a_redis_that_cannot_be_reached_leaves_the_run_to_celery(
    session: ChatSession, user: Any, settings: Any, sent: list[int]
) -> None:
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    run = post(session, user)
    tasks.dispatch_run(run.pk)
    assert sent == [run.pk]


def test_admission_still_decides_which_runs_are_dispatched_at_all(
    user: Any,
    broker: str,
    sent: list[int],
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 1
    first, second = (services.session_create(owner=user, need_user_confirm=False) for _ in "ab")
    with ListeningHost(broker) as host:
        host.serve(second.pk)  # the second conversation is warm on a listening host
        wait_for(
            lambda: redis.Redis.from_url(broker).get(affinity.warm_key(second.pk)),
            timeout=5,
            what="the record",
        )
        with django_capture_on_commit_callbacks(execute=True):
            running = post(first, user)
            waiting = post(second, user)
        time.sleep(0.3)  # an offer, were one sent, would have arrived
        assert host.heard == []  # the waiting run is neither offered...
    assert sent == [running.pk]  # ...nor queued: it waits for its owner's room
    assert AgentRun.objects.get(pk=waiting.pk).status == AgentRun.Status.QUEUED


# --- the receiving side -----------------------------------------------------------------------


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunHost]:
    """A run host (not started: its offers are taken on the test's thread, with the database
    work done right there, so the test's transaction sees it) whose MCP pool holds an open
    session for the chat sessions in `host.warm`."""
    # Sent on through `tasks.send_to_any_worker` as it is when called (`sent` replaces it).
    made = RunHost(send_on=lambda run_id: tasks.send_to_any_worker(run_id), recycle=False)
    caller = CallerLane()  # the units are done on the test's thread
    monkeypatch.setattr(made.lane, "run", caller.run)
    made.caller = caller  # type: ignore[attr-defined]
    warm: set[int] = set()
    pool = sessions.SessionPool()
    monkeypatch.setattr(pool, "holds", warm.__contains__)
    sessions._pools[made.loop] = pool
    made.warm = warm  # type: ignore[attr-defined]
    yield made
    adopted = [task for task, _ in made.runs.values()]
    for task in adopted:
        task.cancel()  # before its first step: nothing of it runs
    if adopted:
        made.loop.run_until_complete(asyncio.gather(*adopted, return_exceptions=True))
    made.lane.close()
    made.loop.close()


def take(host: RunHost, run: AgentRun) -> None:
    """The host hears an offer of `run` (its loop on a helper thread, its units here)."""
    caller: CallerLane = host.caller  # type: ignore[attr-defined]
    caller.serve(lambda _: host._take_offered(run.pk, run.session_id))


def test_a_host_holding_the_conversation_takes_the_run_with_its_lease(
    session: ChatSession, user: Any, host: RunHost, sent: list[int]
) -> None:
    run = post(session, user)
    host.warm.add(session.pk)  # type: ignore[attr-defined]
    take(host, run)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING and run.lease_owner == host.worker
    assert run.pk in host.runs
    assert sent == []


def test_a_stopping_host_sends_an_offered_run_through_celery(
    session: ChatSession, user: Any, host: RunHost, sent: list[int]
) -> None:
    run = post(session, user)
    host.warm.add(session.pk)  # type: ignore[attr-defined]
    host.accepting = False  # SIGTERM, or recycling past its memory limit
    take(host, run)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED and run.lease_owner == ""
    assert host.runs == {}
    assert sent == [run.pk]


def test_a_host_whose_sessions_for_it_closed_sends_the_run_through_celery(
    session: ChatSession, user: Any, broker: str, host: RunHost, sent: list[int]
) -> None:
    run = post(session, user)
    client = redis.Redis.from_url(broker)
    client.set(affinity.warm_key(session.pk), host.worker, ex=60)
    assert host.listener is not None
    take(host, run)  # its pool holds nothing of this conversation (idle limit, cap)
    assert AgentRun.objects.get(pk=run.pk).status == AgentRun.Status.QUEUED
    assert sent == [run.pk] and host.runs == {}
    assert client.get(affinity.warm_key(session.pk)) is None  # no longer claimed
    # A record another host made meanwhile is not this host's to remove.
    client.set(affinity.warm_key(session.pk), "other:2:xyz", ex=60)
    take(host, run)
    assert client.get(affinity.warm_key(session.pk)) == b"other:2:xyz"
    assert sent == [run.pk, run.pk]


def test_a_run_leased_elsewhere_is_left_alone(
    session: ChatSession, user: Any, host: RunHost, sent: list[int]
) -> None:
    run = post(session, user)
    host.warm.add(session.pk)  # type: ignore[attr-defined]
    services.run_start(run_id=run.pk, worker="other:2:xyz")
    take(host, run)
    run.refresh_from_db()
    assert run.lease_owner == "other:2:xyz"
    assert host.runs == {} and sent == []


def test_a_stale_offer_of_a_run_waiting_for_admission_does_not_start_it(
    user: Any, host: RunHost, sent: list[int], settings: Any
) -> None:
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 1
    first, second = (services.session_create(owner=user, need_user_confirm=False) for _ in "ab")
    post(first, user)
    waiting = post(second, user)
    host.warm.add(second.pk)  # type: ignore[attr-defined]
    take(host, waiting)
    waiting.refresh_from_db()
    assert waiting.status == AgentRun.Status.QUEUED and waiting.lease_owner == ""
    assert host.runs == {} and sent == []


def test_a_run_heard_by_a_host_that_died_before_taking_it_is_dispatched_again_by_the_sweep(
    session: ChatSession,
    user: Any,
    broker: str,
    sent: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with ListeningHost(broker) as host:
        host.serve(session.pk)
        wait_for(
            lambda: redis.Redis.from_url(broker).get(affinity.warm_key(session.pk)),
            timeout=5,
            what="the record",
        )
        with django_capture_on_commit_callbacks(execute=True):
            run = post(session, user)
        wait_for(lambda: host.heard, timeout=5, what="the offer")
    # Heard, then the host died before `run_start`: the run is queued with its dispatch
    # deadline, set before the offer as before a Celery message.
    assert sent == []
    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED and run.lease_expires_at is not None
    AgentRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert sweeper.sweep_once().reclaimed == [run.pk]
    assert sent == [run.pk]  # the dead host no longer listens: through Celery
