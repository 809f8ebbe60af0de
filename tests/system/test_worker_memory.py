"""Fault test for the worker's own memory limit: a run that balloons its worker
process past `PLANBOARD_WORKER_MEMORY_LIMIT_MB` fails with an error naming the limit and the
setting, while another run in flight in the same process is handed off and finishes; the
pool process recycles (Celery's pool starts a fresh one) and the worker host lives on.

A real `celery -A planboard worker` (prefork, one pool process, so both runs share it) against
the PostgreSQL test database and a Redis broker; its model is the demo model, except that a
request containing "BALLOON" makes it fill and keep hundreds of megabytes first
(`tests.support.memory_hog`).
"""

from __future__ import annotations

from typing import Any

import pytest

from planboard import services
from planboard.models import AgentRun, ChatSession
from tests.support.processes import (
    Child,
    assert_run_completed_exactly_once,
    own_redis_db,
    process_env,
    start_worker_host,
    wait_for,
)

LIMIT_MB = 900  # well above a fresh pool process (about 250 MB), well below one ballooned
BALLOON_MB = 1200
HOG_MODEL = "hog/test"


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_a_run_that_balloons_its_worker_fails_and_the_other_run_finishes(
    postgres: None,
    redis_url: str,
    children: list[Child],
    test_broker: Any,
    settings: Any,
    user: Any,
    other_user: Any,
) -> None:
    broker = own_redis_db(redis_url, int(redis_url.rsplit("/", 1)[1] or 0))
    test_broker(broker)
    settings.PLANBOARD_LOCAL_MODELS = {
        **settings.PLANBOARD_LOCAL_MODELS,
        "hog": "tests.support.memory_hog.HogModel",
    }
    settings.PLANBOARD_LLM_MODEL = HOG_MODEL
    env = process_env(
        broker,
        DJANGO_SETTINGS_MODULE="tests.support.memory_hog_settings",
        PLANBOARD_LLM_MODEL=HOG_MODEL,
        PLANBOARD_WORKER_PROCESSES="1",  # both runs in the one pool process
        PLANBOARD_WORKER_MEMORY_LIMIT_MB=str(LIMIT_MB),
        PLANBOARD_TEST_BALLOON_MB=str(BALLOON_MB),
        PLANBOARD_DEMO_STEP_DELAY="0.5",
    )
    host = start_worker_host(children, env, "host-mem")
    wait_for(
        lambda: host.alive() and " ready." in host.log.read_text(errors="replace"),
        timeout=90,
        what="the worker host to be ready",
        details=host.tail,
    )

    def start(owner: Any, text: str) -> tuple[ChatSession, AgentRun]:
        session = services.session_create(owner=owner, need_user_confirm=False)
        _, run = services.message_post(session_id=session.pk, author=owner, content=text)
        return session, run

    calm_session, calm = start(user, "Organise a team offsite for twelve people")

    def calm_under_way() -> AgentRun | None:
        assert host.alive(), host.tail()
        row = AgentRun.objects.get(pk=calm.pk)
        return row if row.status == "running" and row.step_count >= 1 else None

    first = wait_for(calm_under_way, timeout=90, what="the first run to be under way")
    first_owner = first.lease_owner
    _, hog = start(other_user, "BALLOON: plan a party for the whole company")

    def hog_done() -> AgentRun | None:
        assert host.alive(), host.tail()
        row = AgentRun.objects.get(pk=hog.pk)
        return None if row.is_active else row

    failed = wait_for(hog_done, timeout=120, what="the ballooning run to end", details=host.tail)
    assert failed.status == AgentRun.Status.FAILED, (failed.status, failed.error, host.tail())
    assert f"memory limit of {LIMIT_MB} MB" in failed.error
    assert "PLANBOARD_WORKER_MEMORY_LIMIT_MB" in failed.error
    assert "this run grew it the most" in failed.error

    owners = {first_owner}

    def calm_done() -> AgentRun | None:
        assert host.alive(), host.tail()
        row = AgentRun.objects.get(pk=calm.pk)
        if row.lease_owner:
            owners.add(row.lease_owner)
        return None if row.is_active else row

    finished = wait_for(calm_done, timeout=180, what="the other run to finish", details=host.tail)
    assert finished.status == AgentRun.Status.SUCCEEDED, (finished.status, finished.error)
    assert finished.error == ""
    assert_run_completed_exactly_once(calm_session, finished)

    log = host.log.read_text(errors="replace")
    assert "recycles its process" in log, host.tail()
    # The first pool process went; a fresh one (another process: another lease owner)
    # finished the calm run, and the worker host itself lives on.
    pids = {owner.split(":")[1] for owner in owners}
    assert len(pids) >= 2, owners
    assert host.alive()
