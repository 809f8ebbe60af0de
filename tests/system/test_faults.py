"""Fault tests: Planboard keeps its promises when parts of the system fail.

- A Celery worker SIGKILLed mid-run: another worker gets the run after the visibility timeout
  and finishes it; nothing is lost and nothing is done twice.
- Redis restarted mid-run: the web server keeps serving and storing writes, the run goes on,
  broadcasts resume after the restart, and clients resync to the stored state.
- LLM errors and timeouts through litellm's real OpenAI client against a local fake provider:
  transient failures are retried, then the run fails with a clear status and reason.
- The database failing in the middle of a write: the transaction leaves no partial change,
  nothing is broadcast, and the API answers with a server error without internals.

The first two start real processes (daphne, Celery, a throwaway redis-server) against the
PostgreSQL test database, so they need PostgreSQL (`postgres` fixture) and Redis; they skip
locally without them and fail in CI (PLANBOARD_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client
from rest_framework.authtoken.models import Token

from agents import loop
from agents.models import AgentStep
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, Plan, PlanEvent, SubTask
from planboard.services import Actor
from tests.support import db
from tests.support.invariants import assert_session_invariants, fingerprint
from tests.support.processes import (
    RUN_FINISH,
    Child,
    RedisServer,
    api,
    assert_run_completed_exactly_once,
    open_socket,
    own_redis_db,
    process_env,
    start_daphne,
    start_worker,
    wait_for,
)

# --- 1. a worker killed mid-run ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_a_worker_killed_mid_run_is_replaced_and_the_run_completes_once(
    postgres: None, redis_url: str, children: list[Child], test_broker: Any, user: Any
) -> None:
    broker = own_redis_db(redis_url, 7)
    test_broker(broker)
    visibility = 3
    env = process_env(
        broker, PLANBOARD_VISIBILITY_TIMEOUT=str(visibility), PLANBOARD_DEMO_STEP_DELAY="0.5"
    )
    first = start_worker(children, env, "first")
    session = services.session_create(owner=user, need_user_confirm=False)
    _, run = services.message_post(
        session_id=session.pk, author=user, content="Plan a three-day trip to Kyoto."
    )

    def some_progress() -> bool:
        assert first.alive(), first.tail()
        return PlanEvent.objects.filter(plan__session=session, action="subtask_finished").exists()

    wait_for(some_progress, timeout=RUN_FINISH, what=f"progress of run {run.pk}\n{first.tail()}")
    first.kill()
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING, "the run ended before the worker was killed"
    done_before = SubTask.objects.filter(plan__session=session, state="done").count()

    # The message stays unacknowledged in Redis; once the visibility timeout has passed, a
    # worker starting up hands it out again.
    time.sleep(visibility + 1)
    second = start_worker(children, env, "second")

    def finished() -> bool:
        assert second.alive(), second.tail()
        run.refresh_from_db()
        return not run.is_active

    wait_for(finished, timeout=RUN_FINISH, what=f"the run to finish\n{second.tail()}")
    assert_run_completed_exactly_once(session, run)
    assert SubTask.objects.filter(plan__session=session, state="done").count() > done_before
    # The second worker did the rest: some steps were recorded after the kill.
    assert AgentStep.objects.filter(run=run).count() >= run.step_count


# --- 2. Redis restarted mid-run -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_redis_restarted_mid_run_web_keeps_serving_and_clients_resync(
    postgres: None, redis_url: str, children: list[Child], test_broker: Any, user: Any
) -> None:
    redis_server = RedisServer(children)
    redis_server.start()
    test_broker(redis_server.url)
    env = process_env(redis_server.url, PLANBOARD_DEMO_STEP_DELAY="1")
    _, base = start_daphne(children, env)
    worker = start_worker(children, env, "worker")
    token = Token.objects.create(user=user).key
    session = services.session_create(owner=user, need_user_confirm=False)

    watcher, _ = open_socket(f"ws://{base}/ws/sessions/{session.pk}/", token)
    status, body = api(
        base, token, "POST", f"/api/sessions/{session.pk}/messages/", {"content": "Plan a trip."}
    )
    assert status == 202, body
    run = AgentRun.objects.get(pk=body["run"]["id"])

    def progress() -> bool:
        assert worker.alive(), worker.tail()
        return PlanEvent.objects.filter(plan__session=session, action="subtask_finished").exists()

    wait_for(progress, timeout=RUN_FINISH, what=f"the run to make progress\n{worker.tail()}")
    assert watcher.plan_versions(), "broadcasts did not arrive before the outage"

    redis_server.stop()
    run.refresh_from_db()
    assert run.is_active, "the run ended before Redis went away"
    # The web keeps serving reads and writes from the database while Redis is down.
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    status, snapshot = api(base, token, "GET", f"/api/plans/{plan_id}/")
    assert status == 200, snapshot
    last = snapshot["subtasks"][-1]
    status, body = api(
        base,
        token,
        "PATCH",
        f"/api/plans/{plan_id}/subtasks/{last['id']}/",
        {"description": "Edited while Redis was down"},
    )
    assert status == 200, body
    assert SubTask.objects.get(pk=last["id"]).description == "Edited while Redis was down"

    redis_server.start()

    def finished() -> bool:
        assert worker.alive(), worker.tail()
        run.refresh_from_db()
        return not run.is_active

    wait_for(finished, timeout=RUN_FINISH, what=f"the run to finish\n{worker.tail()}")
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert_session_invariants(session.pk)

    # A client connecting now (the browser reconnecting) gets the stored state, edit included.
    plan = selectors.plan_snapshot(plan_id=plan_id)
    again, _ = open_socket(f"ws://{base}/ws/plans/{plan_id}/", token)
    assert again.snapshots()[-1]["plan"] == plan
    # A client that stayed connected: the pub/sub layer re-subscribed after the restart, so
    # the socket lived on; it asks for a resync after the gap and gets the stored state.
    assert watcher.close_code is None, "the session socket did not live through the restart"
    watcher.outbox.append({"type": "resync"})
    resyncs = len(watcher.snapshots())
    wait_for(lambda: len(watcher.snapshots()) > resyncs, timeout=30, what="the resync snapshot")
    assert watcher.snapshots()[-1]["session"] == selectors.session_snapshot(session_id=session.pk)

    # Broadcasts resume: a new message reaches the client that stayed and one connected after
    # the restart.
    follower, _ = open_socket(f"ws://{base}/ws/sessions/{session.pk}/", token)
    status, body = api(
        base,
        token,
        "POST",
        f"/api/sessions/{session.pk}/messages/",
        {"content": "Thanks, one more question."},
    )
    assert status == 202, body

    def delivered() -> bool:
        return all(
            any(
                m.get("type") == "session.message" and m["message"]["id"] == body["message"]["id"]
                for m in list(log.messages)
            )
            for log in (watcher, follower)
        )

    wait_for(delivered, timeout=30, what="the broadcast after the restart")
    for log in (again, watcher, follower):
        log.stop.set()


# --- 3. LLM errors and timeouts -------------------------------------------------------------------


class FakeProvider(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint on loopback that answers from a script of behaviours."""

    daemon_threads = True

    def __init__(self, script: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), FakeProviderHandler)
        self.script = list(script)
        self.requests = 0
        self.release = threading.Event()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class FakeProviderHandler(BaseHTTPRequestHandler):
    server: FakeProvider

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests += 1
        behaviour = self.server.script.pop(0) if self.server.script else "answer"
        if behaviour == "hang":
            self.server.release.wait(10)  # longer than the client's timeout
            return
        statuses = {"unavailable": 503, "rate_limit": 429, "unauthorized": 401}
        if behaviour in statuses:
            self._json(statuses[behaviour], {"error": {"message": f"scripted {behaviour}"}})
            return
        self._json(
            200,
            {
                "id": "chatcmpl-fault",
                "object": "chat.completion",
                "created": 0,
                "model": "fault-test",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Here is my answer."},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
            },
        )

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def provider(settings: Any) -> Iterator[Callable[[list[str]], FakeProvider]]:
    servers: list[FakeProvider] = []

    def make(script: list[str]) -> FakeProvider:
        server = FakeProvider(script)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        settings.PLANBOARD_LLM_MODEL = "openai/fault-test"
        settings.PLANBOARD_LLM_API_BASE = server.base
        settings.PLANBOARD_LLM_API_KEY = "sk-fault-test"
        settings.PLANBOARD_LLM_TIMEOUT = 1.0
        settings.PLANBOARD_LLM_ATTEMPTS = 3
        settings.PLANBOARD_LLM_RETRY_DELAY = 0
        return server

    yield make
    for server in servers:
        server.release.set()
        server.shutdown()
        server.server_close()


def run_once(user: Any) -> tuple[ChatSession, AgentRun]:
    session = services.session_create(owner=user, need_user_confirm=False)
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello there.")
    return session, loop.execute_run(run_id=run.pk)


def latest_run_over_api(user: Any, session: ChatSession) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/sessions/{session.pk}/")
    assert response.status_code == 200
    return response.json()["latest_run"]


@pytest.mark.django_db
def test_transient_llm_errors_are_retried_and_the_run_succeeds(
    provider: Callable[[list[str]], FakeProvider], user: Any
) -> None:
    server = provider(["unavailable", "hang", "answer"])
    session, run = run_once(user)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert server.requests == 3
    assert Message.objects.filter(session=session, role="assistant").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("behaviour", "named"),
    [("hang", "Timeout"), ("unavailable", "ServiceUnavailable"), ("rate_limit", "RateLimit")],
)
def test_an_llm_that_keeps_failing_fails_the_run_clearly_after_the_retries(
    provider: Callable[[list[str]], FakeProvider], user: Any, behaviour: str, named: str
) -> None:
    server = provider([behaviour] * 3)
    session, run = run_once(user)
    assert server.requests == 3, "every attempt reached the provider, and no more"
    assert run.status == AgentRun.Status.FAILED
    assert "could not be reached after 3 attempts" in run.error
    assert named in run.error
    shown = latest_run_over_api(user, session)
    assert shown["status"] == "failed" and shown["error"] == run.error
    # Nothing half-done: no answer stored, no plan.
    assert not Message.objects.filter(session=session, role="assistant").exists()
    assert session.plans.count() == 0


@pytest.mark.django_db
def test_a_refused_request_fails_at_once_without_retrying(
    provider: Callable[[list[str]], FakeProvider], user: Any
) -> None:
    server = provider(["unauthorized"])
    session, run = run_once(user)
    assert server.requests == 1
    assert run.status == AgentRun.Status.FAILED
    assert "refused the request" in run.error and "Authentication" in run.error
    assert latest_run_over_api(user, session)["status"] == "failed"


# --- 4. the database failing in the middle of a write ---------------------------------------------


class FailingDatabase:
    """A cursor wrapper: the first statement matching `table` and `verb` raises as if the
    connection to the database had just been lost."""

    def __init__(self, table: str, verb: str = "INSERT") -> None:
        self.table = table
        self.verb = verb
        self.failed = 0
        self.statements: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.statements.append(sql)
        if not self.failed and sql.lstrip().upper().startswith(self.verb) and self.table in sql:
            self.failed += 1
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)


@pytest.mark.django_db
def test_a_database_failure_mid_service_leaves_no_partial_change(
    plan: Plan, actor: Actor, user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    before = fingerprint(user.pk)
    failing = FailingDatabase("planboard_planevent")
    with (
        django_capture_on_commit_callbacks() as callbacks,
        db.execute_wrapper(failing),
        pytest.raises(OperationalError),
    ):
        services.subtask_add(plan_id=plan.pk, actor=actor, name="Half written", index=0)
    assert failing.failed == 1
    # The subtask row and the position shift were written before the failure...
    assert any("planboard_subtask" in sql for sql in failing.statements[:-1])
    # ...and rolled back with it; nothing was broadcast.
    assert fingerprint(user.pk) == before
    assert callbacks == []
    assert_session_invariants(plan.session_id)
    # Once the database is back, the same write works.
    services.subtask_add(plan_id=plan.pk, actor=actor, name="Written", index=0)
    assert_session_invariants(plan.session_id)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "body", "table"),
    [
        (
            "patch",
            "/api/plans/{plan}/subtasks/{subtask}/",
            {"name": "Renamed"},
            "planboard_planevent",
        ),
        ("post", "/api/plans/{plan}/subtasks/", {"name": "New"}, "planboard_planevent"),
        ("post", "/api/sessions/{session}/messages/", {"content": "Hi"}, "planboard_message"),
    ],
)
def test_the_api_answers_a_database_failure_with_a_server_error_and_changes_nothing(
    plan: Plan,
    user: Any,
    method: str,
    path: str,
    body: dict[str, Any],
    table: str,
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    first = plan.subtasks.order_by("position").first()
    url = path.format(plan=plan.pk, subtask=first.pk, session=plan.session_id)
    before = fingerprint(user.pk), Message.objects.count(), AgentRun.objects.count()
    failing = FailingDatabase(table)
    with db.execute_wrapper(failing):
        response = getattr(client, method)(url, body, content_type="application/json")
    assert failing.failed == 1
    assert response.status_code >= 500
    text = response.content.decode()
    for leak in ("Traceback", "OperationalError", "server closed", "INSERT INTO"):
        assert leak not in text, f"the error page shows internals ({leak})"
    assert (fingerprint(user.pk), Message.objects.count(), AgentRun.objects.count()) == before
    assert_session_invariants(plan.session_id)


@pytest.mark.django_db
def test_the_api_reports_a_database_failure_as_json(plan: Plan, user: Any) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    first = plan.subtasks.order_by("position").first()
    with db.execute_wrapper(FailingDatabase("planboard_planevent")):
        response = client.patch(
            f"/api/plans/{plan.pk}/subtasks/{first.pk}/",
            {"name": "Renamed"},
            content_type="application/json",
        )
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] and body["code"]
    assert "server closed" not in json.dumps(body)
