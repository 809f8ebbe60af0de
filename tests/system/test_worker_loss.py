"""Fault tests for losing worker hosts, with the operator's default lease (60 s) and the
plain production worker command:

- a whole worker host SIGKILLed (its process group: the parent and every pool process) with
  a hundred runs in flight → every run finishes on the other host within lease +
  90 s (the sweep of expired leases, not the broker's one-hour visibility timeout), no step
  doubled, the MCP tool's effect happens once per run, each plan step applied once, and each
  plan's event log has every version (`assert_session_invariants`);
- one user posting six messages with a cap of two runs in flight → two run, four wait with
  places 1..4 that move up as runs finish, and all complete.

They start real Celery workers against the PostgreSQL test database and a Redis broker, so
they skip without those services (and fail in CI, PLANBOARD_REQUIRE_SERVICES=1). The first
takes about a minute and a half: the lease must run out.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import AgentStep
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, ToolCall
from tests.support.demo_http import DemoOverHttp
from tests.support.mcp_servers import HttpServer, http_toolset, notes_written
from tests.support.processes import (
    Child,
    assert_run_completed_exactly_once,
    own_redis_db,
    process_env,
    start_worker_host,
    wait_for,
)

LEASE = 60.0  # the default PLANBOARD_RUN_LEASE_SECONDS
RUNS = 100  # in flight when a host is killed
NOTE_TOOL = "remote__write_note"


def broker_of(redis_url: str) -> str:
    """The test's own Redis database (the one PLANBOARD_TEST_REDIS_URL names), emptied."""
    return own_redis_db(redis_url, int(redis_url.rsplit("/", 1)[1] or 0))


def wait_until_ready(host: Child) -> None:
    wait_for(
        lambda: host.alive() and " ready." in host.log.read_text(errors="replace"),
        timeout=90,
        what=f"{host.name} to be ready",
        details=host.tail,
    )


def owner_pid(run: AgentRun) -> int | None:
    """The process driving a run, from its lease owner ("host:pid:random")."""
    parts = run.lease_owner.split(":")
    return int(parts[1]) if run.status == "running" and len(parts) == 3 else None


def assert_no_step_doubled(run: AgentRun) -> None:
    answers = list(
        Message.objects.filter(run=run, role=Message.Role.ASSISTANT).values_list(
            "answer_id", flat=True
        )
    )
    assert len(answers) == len(set(answers)), f"run {run.pk}: an answer was stored twice"
    kept = list(
        AgentStep.objects.filter(run=run, status=AgentStep.Status.COMPLETED).values_list(
            "number", flat=True
        )
    )
    assert len(kept) == len(set(kept)), f"run {run.pk}: a step number completed twice"


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_a_killed_worker_host_s_runs_finish_on_the_other_host_within_the_lease(
    postgres: None,
    redis_url: str,
    children: list[Child],
    test_broker: Any,
    settings: Any,
    user: Any,
    other_user: Any,
    staff: Any,
    mcp_http: HttpServer,
) -> None:
    broker = broker_of(redis_url)
    test_broker(broker)
    remote = http_toolset(staff, mcp_http)
    services.toolset_update(toolset_id=remote.pk, user=None, tool_policies={"write_note": "auto"})
    with DemoOverHttp(delay=1.0, note_tool=NOTE_TOOL) as model:
        llm = {
            "PLANBOARD_LLM_MODEL": "openai/demo-over-http",
            "PLANBOARD_LLM_API_BASE": model.base_url,
            "PLANBOARD_LLM_API_KEY": "sk-demo-over-http",
            "PLANBOARD_LLM_RETRY_DELAY": "0.2",
        }
        for name, value in llm.items():
            setattr(settings, name, value)
        # Two people start fifty runs each: the per-person cap must not hold them back.
        settings.PLANBOARD_USER_RUNS_IN_FLIGHT = RUNS
        env = process_env(
            broker,
            **llm,
            PLANBOARD_TOOL_ALLOWED_NETWORKS="127.0.0.1/32",
            PLANBOARD_USER_RUNS_IN_FLIGHT=str(RUNS),
        )
        del env["PLANBOARD_RUN_LEASE_SECONDS"]  # the default lease, as an operator runs it
        # Host a takes all the runs while the model holds its answers, so they start together;
        # host b joins once they are in flight (a host deployed beside a busy one) and must
        # take every one of them over.
        hosts = [start_worker_host(children, env, "host-a")]
        wait_until_ready(hosts[0])
        model.hold()
        runs: dict[int, tuple[ChatSession, AgentRun]] = {}
        for number, owner in enumerate([user, other_user] * (RUNS // 2)):
            session = services.session_create(owner=owner, need_user_confirm=False)
            services.session_set_toolsets(session_id=session.pk, toolset_ids=[remote.pk])
            _, run = services.message_post(
                session_id=session.pk,
                author=owner,
                content=f"Organise a team offsite, number {number}",
            )
            runs[run.pk] = (session, run)

        def all_in_flight_on_a() -> list[AgentRun] | None:
            assert hosts[0].alive(), hosts[0].tail()
            rows = list(AgentRun.objects.filter(pk__in=runs))
            # Running on host a: each waits on the model for its first answer.
            on_a = [r for r in rows if (pid := owner_pid(r)) and hosts[0].in_group(pid)]
            return on_a if len(on_a) == RUNS else None

        lost = wait_for(
            all_in_flight_on_a,
            timeout=120,
            what=f"{RUNS} runs in flight on host-a",
            details=hosts[0].tail,
        )
        hosts.append(start_worker_host(children, env, "host-b"))
        wait_until_ready(hosts[1])
        # The runs move on, each at its own pace, until a tenth have their MCP call's result:
        # host a then dies with runs inside the tool call and past it.
        model.release()

        def some_past_the_tool() -> bool:
            done = ToolCall.objects.filter(
                run__in=runs, tool="write_note", status=ToolCall.Status.SUCCEEDED
            )
            return done.count() >= RUNS // 10

        wait_for(some_past_the_tool, timeout=120, what="runs past their tool call")
        killed_at = timezone.now()
        hosts[0].kill_group()
        assert not hosts[0].alive()
        lost_ids = {r.pk for r in lost}
        # Each run goes at its own pace: a quick one may have finished on host a before it
        # died. It has nothing left to prove; the kill must still catch nearly all in flight.
        ended = set(
            AgentRun.objects.filter(pk__in=lost_ids)
            .exclude(status__in=AgentRun.ACTIVE_STATUSES)
            .values_list("pk", flat=True)
        )
        assert len(ended) <= RUNS // 10, f"{len(ended)} of {RUNS} runs ended before the kill"
        lost_ids -= ended
        steps = sorted(
            AgentRun.objects.filter(pk__in=lost_ids).values_list("step_count", flat=True)
        )
        print(f"killed host-a with {len(lost_ids)} of {RUNS} runs in flight, at steps {steps}")

        def all_done() -> bool:
            assert hosts[1].alive(), hosts[1].tail()
            return not AgentRun.objects.filter(
                pk__in=runs, status__in=AgentRun.ACTIVE_STATUSES
            ).exists()

        wait_for(
            all_done,
            timeout=LEASE + 90,
            what="every run to finish on the surviving host",
            details=lambda: hosts[1].tail(),
        )

    # The sweep finds expired leases within a quarter of the lease; the surviving host then
    # drives the killed host's runs to their end beside its own.
    bound = killed_at + timedelta(seconds=LEASE + 90)
    notes = notes_written(mcp_http.notes)
    interrupted = 0
    for run_id, (session, run) in runs.items():
        run.refresh_from_db()
        assert run.status == AgentRun.Status.SUCCEEDED, (run.pk, run.error)
        if run_id in lost_ids:
            took = (run.finished_at - killed_at).total_seconds()
            print(f"run {run_id} (on the killed host) finished {took:.1f}s after the kill")
            assert run.finished_at <= bound, f"run {run_id} finished {took:.0f}s after the kill"
        assert_run_completed_exactly_once(session, run)  # each plan step applied once
        assert_no_step_doubled(run)
        # The tool's effect: once, or (a call the kill interrupted) at most once and reported
        # to the model as interrupted, never silently run again.
        request = Message.objects.get(session=session, role=Message.Role.USER).content
        record = ToolCall.objects.get(run=run, tool="write_note")
        interrupted += record.status == ToolCall.Status.INTERRUPTED
        if record.status == ToolCall.Status.INTERRUPTED:
            assert notes.count(request) <= 1
        else:
            assert record.status == ToolCall.Status.SUCCEEDED
            assert notes.count(request) == 1, (request, notes)
    print(f"{interrupted} MCP calls interrupted by the kill, none run again")


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_one_users_runs_beyond_the_cap_wait_in_order_and_all_complete(
    postgres: None, redis_url: str, children: list[Child], test_broker: Any, settings: Any
) -> None:
    broker = broker_of(redis_url)
    test_broker(broker)
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 2
    settings.PLANBOARD_LLM_MODEL = ""  # the demo model, as the worker uses it
    env = process_env(broker, PLANBOARD_USER_RUNS_IN_FLIGHT="2", PLANBOARD_DEMO_STEP_DELAY="0.3")
    user = get_user_model().objects.create_user("queuer", password="pw-queuer-123")
    sessions = [services.session_create(owner=user, need_user_confirm=False) for _ in range(6)]
    runs = [
        services.message_post(session_id=s.pk, author=user, content=f"Write an essay {n}")[1]
        for n, s in enumerate(sessions)
    ]
    # Before any worker exists: two dispatched, four waiting in order.
    shown = [selectors.session_snapshot(session_id=s.pk)["latest_run"] for s in sessions]
    assert [r["queue_position"] for r in shown] == [None, None, 1, 2, 3, 4]
    assert all(r["status"] == "queued" for r in shown)

    host = start_worker_host(children, env, "host")
    seen: dict[int, list[int | None]] = {r.pk: [] for r in runs}
    admitted_at: dict[int, float] = {}

    def finished() -> bool:
        assert host.alive(), host.tail()
        rows = list(AgentRun.objects.filter(pk__in=seen).order_by("id"))
        assert sum(1 for r in rows if r.status == "running") <= 2, "more than 2 in flight"
        for row in rows:
            place = selectors.run_queue_position(run=row)
            if not seen[row.pk] or seen[row.pk][-1] != place:
                seen[row.pk].append(place)
            if place is None:
                admitted_at.setdefault(row.pk, time.monotonic())
        return all(not r.is_active for r in rows)

    wait_for(finished, timeout=180, what="all six runs to complete", details=host.tail)
    for session, run in zip(sessions, runs, strict=True):
        assert_run_completed_exactly_once(session, run)
    # Each waiting run moved up place by place (no jumps back) and went in creation order.
    for run in runs[2:]:
        places = seen[run.pk]
        assert places[-1] is None and all(isinstance(p, int) for p in places[:-1]), places
        assert places[:-1] == sorted(places[:-1], reverse=True), places
    order = sorted(admitted_at, key=lambda pk: admitted_at[pk])
    assert order[2:] == [r.pk for r in runs[2:]]
    assert [r.pk for r in runs[2:]] == [pk for pk in seen if seen[pk][0] is not None]
