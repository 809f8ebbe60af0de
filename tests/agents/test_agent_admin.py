"""Agent steps in Django admin: reviewable, never editable."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from agents import loop
from agents.models import AgentStep
from planboard import services
from planboard.models import AgentRun
from tests.support.scripted import ScriptedModel, call, say, tool_calls


@pytest.fixture
def finished_run(user: Any, scripted_model: ScriptedModel) -> AgentRun:
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.extend([tool_calls(call("get_subtask_count")), say("No plan yet.")])
    _, run = services.message_post(session_id=session.pk, author=user, content="Status?")
    return loop.execute_run(run_id=run.pk)


def test_steps_are_listed_and_shown_read_only(admin_client, finished_run: AgentRun):
    step = AgentStep.objects.filter(run=finished_run).order_by("number").first()
    listing = admin_client.get(reverse("admin:agents_agentstep_changelist"))
    assert listing.status_code == 200
    assert b"get_subtask_count" in listing.content

    detail = admin_client.get(reverse("admin:agents_agentstep_change", args=[step.pk]))
    assert detail.status_code == 200
    assert b"&lt;system-hint&gt;" in detail.content  # the hint the model saw
    assert b'name="hint"' not in detail.content  # shown, not editable

    assert admin_client.get(reverse("admin:agents_agentstep_add")).status_code == 403
    deleted = admin_client.post(
        reverse("admin:agents_agentstep_delete", args=[step.pk]), {"post": "yes"}
    )
    assert deleted.status_code == 403
    assert AgentStep.objects.filter(pk=step.pk).exists()


def test_a_runs_page_shows_its_steps(admin_client, finished_run: AgentRun):
    page = admin_client.get(reverse("admin:planboard_agentrun_change", args=[finished_run.pk]))
    assert page.status_code == 200
    assert b"agent step" in page.content.lower()
    assert page.content.count(b"get_subtask_count") >= 1


def test_people_without_admin_rights_cannot_see_steps(client, user, finished_run: AgentRun):
    client.force_login(user)
    response = client.get(reverse("admin:agents_agentstep_changelist"))
    assert response.status_code == 302  # sent to the admin login
