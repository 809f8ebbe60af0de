"""Warm-host affinity with real workers (agents/runtime/affinity.py): two `celery` worker
processes on one Redis broker and the PostgreSQL test database, a conversation whose run
called a stateful tool (the test server's in-memory counter, over stdio).

- Its next run — and that run again after an approval wait — is offered to the process that
  holds its MCP session and is driven there: the tool sees the earlier state, and the result
  carries no "started afresh" note — where plain Celery dispatch would land on either process.
- When that process is killed, the next run goes through Celery to the other one at once (not
  after the lease: it is 60 s here) and its result says the server was started afresh.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from agents.mcp import sessions
from agents.runtime import affinity
from planboard import services
from planboard.models import AgentRun, ChatSession
from tests.support.mcp_servers import notes_written, stdio_toolset
from tests.support.openai_server import FakeOpenAI
from tests.support.processes import (
    Child,
    _broker,
    dispatch_to_test_broker,
    own_redis_db,
    process_env,
    start_worker,
    wait_for,
)
from tests.support.runs import result_of

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

TOTAL = re.compile(r"^total (\d+) in pid (\d+)")
FINISH = 60.0
OFFERS: list[bool] = []  # per dispatch: was the run heard by a warm host?


def offer_then_test_broker(run_id: int, session_id: int | None = None) -> None:
    """`agents.tasks.dispatch_run` against the test's broker: offer, else Celery."""
    heard = affinity.offer(run_id, session_id=session_id, url=_broker["url"])
    OFFERS.append(heard)
    if not heard:
        dispatch_to_test_broker(run_id)


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    yield fake
    fake.server.shutdown()


def tool_call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": f"counting__{tool}", "arguments": json.dumps(arguments)},
    }


def counted(text: str) -> tuple[int, int]:
    found = TOTAL.match(text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_a_conversations_next_run_goes_where_its_server_is_warm_and_elsewhere_once_gone(
    postgres: None,
    redis_url: str,
    children: list[Child],
    test_broker: Any,
    settings: Any,
    superuser: Any,
    user: Any,
    model: FakeOpenAI,
    tmp_path: Path,
) -> None:
    broker = own_redis_db(redis_url, int(redis_url.rsplit("/", 1)[1] or 0))
    test_broker(broker)
    settings.PLANBOARD_RUN_DISPATCHER = "tests.system.test_warm_host.offer_then_test_broker"
    OFFERS.clear()
    settings.PLANBOARD_LLM_MODEL = "openai/gpt-4o-mini"  # the session's model is chosen here
    counting = stdio_toolset(superuser, name="counting", notes=tmp_path / "notes.txt")
    services.toolset_update(
        toolset_id=counting.pk,
        user=None,
        tool_policies={"counter_add": "auto", "write_note": "ask"},
    )
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[counting.pk])

    env = process_env(
        broker,
        PLANBOARD_LLM_MODEL="openai/gpt-4o-mini",
        PLANBOARD_LLM_API_BASE=model.base_url,
        PLANBOARD_LLM_API_KEY="sk-test",
        PLANBOARD_LLM_RETRY_DELAY="0",
        PLANBOARD_RUN_LEASE_SECONDS="60",  # a lost run would wait a minute for the sweep
    )
    workers = [start_worker(children, env, name) for name in ("warm-a", "warm-b")]

    def logs() -> str:
        return "\n".join(w.tail() for w in workers)

    def ready() -> bool:
        return all(w.alive() and " ready." in w.log.read_text(errors="replace") for w in workers)

    wait_for(ready, timeout=90, what="both workers to be ready", details=logs)
    channels = redis.Redis.from_url(broker)
    wait_for(
        lambda: len(channels.pubsub_channels(affinity.CHANNEL.format(worker="*"))) == 2,
        timeout=30,
        what="both run hosts listening for offers",
        details=logs,
    )

    def stops(run: AgentRun) -> AgentRun:
        """`run` once it has stopped (finished, or waiting for a person)."""
        wait_for(
            lambda: AgentRun.objects.get(pk=run.pk).status not in AgentRun.ACTIVE_STATUSES,
            timeout=FINISH,
            what=f"run {run.pk} to stop",
            details=logs,
        )
        run.refresh_from_db()
        return run

    def one_run(call_id: str, text: str, *, approval_first: bool = False) -> tuple[AgentRun, str]:
        """A run whose model calls `counter_add` (after `write_note`, which waits for the
        person's approval, with `approval_first`); the counter's result."""
        if approval_first:
            model.answer(calls=[tool_call(f"{call_id}-note", "write_note", text=text)])
        model.answer(calls=[tool_call(call_id, "counter_add", n=1)])
        model.answer("Counted.")
        _, run = services.message_post(session_id=session.pk, author=user, content=text)
        if approval_first:
            waiting = stops(run)
            assert waiting.status == AgentRun.Status.WAITING_FOR_APPROVAL, waiting.error
            services.tool_call_decide(
                session_id=session.pk,
                tool_call_id=f"{call_id}-note",
                user=user,
                decision="approve",
            )
        done = stops(run)
        assert done.status == AgentRun.Status.SUCCEEDED, done.error + logs()
        return run, result_of(ChatSession.objects.get(pk=session.pk), call_id)

    _, first = one_run("a1", "Count once")
    total, server = counted(first)
    assert total == 1 and "[Planboard" not in first
    warm = next(w for w in workers if w.popen.pid == parent_of(server))
    # The host recorded itself as the conversation's warm host right after the call (a
    # person's next message comes seconds later; here it would come at once).
    wait_for(
        lambda: channels.get(affinity.warm_key(session.pk)),
        timeout=10,
        what="the warm record",
    )
    assert f":{warm.popen.pid}:" in str(channels.get(affinity.warm_key(session.pk)))
    assert OFFERS == [False]  # nothing was warm yet: Celery

    # The next message, and the same run again after an approval wait: both are offered to
    # the warm process and driven there.
    _, second = one_run("a2", "Count again", approval_first=True)
    assert OFFERS == [False, True, True], logs()
    assert counted(second) == (2, server), second  # the same server, its state kept
    assert notes_written(tmp_path / "notes.txt") == ["Count again"]  # approved, written once
    assert "[Planboard" not in second

    # The warm process dies: the next run goes through Celery to the other one at once.
    warm.kill()

    def still_listening() -> list[Any]:
        pattern = affinity.CHANNEL.format(worker="*")
        return [c for c in channels.pubsub_channels(pattern) if f":{warm.popen.pid}:".encode() in c]

    wait_for(lambda: not still_listening(), timeout=10, what="the killed host's channel to close")
    started = time.monotonic()
    _, third = one_run("a3", "And once more")
    assert time.monotonic() - started < 30, "the run waited for the sweep"
    assert OFFERS == [False, True, True, False]
    total, elsewhere = counted(third)
    assert total == 1 and elsewhere != server
    assert third.endswith(sessions.lost_note("counting", sessions.ELSEWHERE))
