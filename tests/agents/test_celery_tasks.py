"""The Celery task and the dispatcher, without a broker (a real worker is in test_celery_worker)."""

from __future__ import annotations

from typing import Any

import pytest

from agents import tasks
from planboard import services
from planboard.models import AgentRun
from tests.support.scripted import ScriptedModel, say


def test_the_task_is_durable():
    assert tasks.run_agent.name == "agents.tasks.run_agent"
    assert tasks.run_agent.acks_late is True
    assert tasks.run_agent.reject_on_worker_lost is True


def test_the_default_dispatcher_is_this_one():
    from planboard import settings as project_settings  # the module, not the test overrides

    assert project_settings.PLANBOARD_RUN_DISPATCHER == "agents.tasks.dispatch_run"


def test_the_task_runs_the_loop(user, scripted_model: ScriptedModel):
    session = services.session_create(owner=user)
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    scripted_model.script.append(say("Hi!"))
    result = tasks.run_agent.apply(args=[run.pk])
    assert result.get() == AgentRun.Status.SUCCEEDED
    assert AgentRun.objects.get(pk=run.pk).status == AgentRun.Status.SUCCEEDED


def test_dispatch_queues_the_task(monkeypatch):
    queued: list[Any] = []
    monkeypatch.setattr(tasks.run_agent, "delay", lambda run_id: queued.append(run_id))
    tasks.dispatch_run(7)
    assert queued == [7]


def test_a_run_that_cannot_be_queued_fails_readably(user, monkeypatch):
    def broker_down(run_id: int) -> None:
        raise ConnectionRefusedError("broker at redis://nowhere is down")

    monkeypatch.setattr(tasks.run_agent, "delay", broker_down)
    session = services.session_create(owner=user)
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    tasks.dispatch_run(run.pk)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.FAILED
    assert "could not be queued" in run.error and "ConnectionRefusedError" in run.error


def test_message_post_dispatches_through_the_setting(
    user, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.PLANBOARD_RUN_DISPATCHER = "agents.tasks.dispatch_run"
    queued: list[int] = []
    monkeypatch.setattr(tasks.run_agent, "delay", queued.append)
    session = services.session_create(owner=user)
    with django_capture_on_commit_callbacks(execute=True):
        _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    assert queued == [run.pk]


def test_orphaned_runs_are_queued_again(user, monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(tasks, "dispatch_run", queued.append)
    sessions = [services.session_create(owner=user) for _ in range(4)]
    runs = [
        services.message_post(session_id=s.pk, author=user, content="Hello")[1] for s in sessions
    ]
    services.run_start(run_id=runs[1].pk)  # running when the process died
    services.run_start(run_id=runs[2].pk)
    services.run_finish(run_id=runs[2].pk, status="succeeded")
    services.run_cancel(session_id=sessions[3].pk)
    assert tasks.resume_orphaned_runs() == [runs[0].pk, runs[1].pk]
    assert queued == [runs[0].pk, runs[1].pk]


@pytest.mark.parametrize("status", ["succeeded", "cancelled"])
def test_a_delivered_run_that_is_over_is_left_alone(user, status, scripted_model: ScriptedModel):
    session = services.session_create(owner=user)
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    if status == "cancelled":
        services.run_cancel(session_id=session.pk)
    else:
        services.run_start(run_id=run.pk)
        services.run_finish(run_id=run.pk, status=status)
    assert tasks.run_agent.apply(args=[run.pk]).get() == status
    assert scripted_model.requests == []
