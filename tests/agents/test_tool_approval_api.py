"""Approve, deny and always-allow through the REST endpoints, with the run re-driven after each
decision: a real MCP server (streamable HTTP) counts how often a call really ran."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from agents import loop
from planboard import services
from planboard.models import AgentRun, ChatSession, Message, ToolCall, Toolset
from tests.support.mcp_servers import HttpServer, http_toolset, notes_written
from tests.support.scripted import ScriptedModel, call, say, tool_calls
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def remote(staff: Any, user: Any, mcp_http: HttpServer, session: ChatSession) -> Toolset:
    toolset = http_toolset(staff, mcp_http)
    response = api_client_for(user).patch(
        f"/api/sessions/{session.pk}/", {"toolsets": [toolset.pk]}, format="json"
    )
    assert response.status_code == 200, response.json()
    return toolset


def decide(who: Any, session: ChatSession, call_id: str, **body: Any) -> Any:
    return api_client_for(who).post(
        f"/api/sessions/{session.pk}/tool-calls/{call_id}/decision/", body, format="json"
    )


def start(session: ChatSession, user: Any, model: ScriptedModel, *calls: Any) -> AgentRun:
    model.script.append(tool_calls(*calls))
    _, run = services.message_post(session_id=session.pk, author=user, content="Write it down")
    return loop.execute_run(run_id=run.pk)


def test_approve_over_rest_runs_the_call_exactly_once(
    session: ChatSession, user: Any, remote: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    run = start(session, user, scripted_model, call("remote__write_note", call_id="w", text="a"))
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    response = decide(user, session, "w", decision="approve", note="go ahead")
    assert response.status_code == 200 and response.json()["run"]["status"] == "queued"
    scripted_model.script.append(say("Written."))
    for _ in range(3):  # the first drive finishes it; redeliveries change nothing
        loop.execute_run(run_id=run.pk)
    assert notes_written(mcp_http.notes) == ["a"]
    assert AgentRun.objects.get(pk=run.pk).status == AgentRun.Status.SUCCEEDED
    calls = api_client_for(user).get(f"/api/sessions/{session.pk}/tool-calls/").json()["results"]
    assert [(c["status"], c["note"]) for c in calls] == [("succeeded", "go ahead")]
    assert calls[0]["duration_ms"] is not None
    assert Message.objects.filter(session=session, tool_call_id="w").count() == 1


def test_deny_over_rest_tells_the_model_and_runs_nothing(
    session: ChatSession, user: Any, remote: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    run = start(session, user, scripted_model, call("remote__write_note", call_id="w", text="a"))
    assert decide(user, session, "w", decision="deny", note="Wrong file").status_code == 200
    scripted_model.script.append(say("OK, not writing."))
    assert loop.execute_run(run_id=run.pk).status == AgentRun.Status.SUCCEEDED
    result = next(m for m in scripted_model.requests[1] if m.get("tool_call_id") == "w")
    assert result["content"] == "Error: the person denied this call. Their note: Wrong file"
    assert notes_written(mcp_http.notes) == []


def test_always_allow_over_rest(
    session: ChatSession, user: Any, remote: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    run = start(session, user, scripted_model, call("remote__write_note", call_id="w1", text="1"))
    response = decide(user, session, "w1", decision="approve", always_allow=True)
    assert response.json()["tool_call"]["always_allow"] is True
    scripted_model.script.extend(
        [tool_calls(call("remote__write_note", call_id="w2", text="2")), say("Done.")]
    )
    assert loop.execute_run(run_id=run.pk).status == AgentRun.Status.SUCCEEDED
    assert notes_written(mcp_http.notes) == ["1", "2"]
    # Only in this session: another session of the same owner asks again.
    other = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=other.pk, toolset_ids=[remote.pk])
    later = start(other, user, scripted_model, call("remote__write_note", call_id="w3", text="3"))
    assert later.status == AgentRun.Status.WAITING_FOR_APPROVAL


def test_a_lead_cannot_approve_and_nothing_runs(
    session: ChatSession, user: Any, lead: Any, remote: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    run = start(session, user, scripted_model, call("remote__write_note", call_id="w", text="a"))
    assert decide(lead, session, "w", decision="approve").status_code == 403
    listed = api_client_for(lead).get(f"/api/sessions/{session.pk}/tool-calls/")
    assert listed.status_code == 200 and listed.json()["results"][0]["status"] == "pending"
    assert loop.execute_run(run_id=run.pk).status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert notes_written(mcp_http.notes) == []
    assert ToolCall.objects.get(tool_call_id="w").status == "pending"


def test_an_answerers_always_allow_asks_again_once_they_are_taken_off(
    session: ChatSession, user: Any, remote: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    services.answerer_consent_set(user=bob, named_by="anyone")
    services.session_set_answerers(session_id=session.pk, user=user, usernames=["bob"])
    run = start(session, user, scripted_model, call("remote__write_note", call_id="w1", text="1"))
    # Answerers approve, never "always allow" now; a grant bob made while they could:
    assert decide(bob, session, "w1", decision="approve", always_allow=True).status_code == 403
    assert decide(bob, session, "w1", decision="approve").status_code == 200
    ToolCall.objects.filter(tool_call_id="w1").update(always_allow=True)
    scripted_model.script.extend(
        [tool_calls(call("remote__write_note", call_id="w2", text="2")), say("Done.")]
    )
    assert loop.execute_run(run_id=run.pk).status == AgentRun.Status.SUCCEEDED
    assert notes_written(mcp_http.notes) == ["1", "2"]  # his grant let w2 run unasked
    # Alice takes bob off: what he granted no longer counts.
    services.session_set_answerers(session_id=session.pk, user=user, usernames=[])
    later = start(session, user, scripted_model, call("remote__write_note", call_id="w3", text="3"))
    assert later.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert notes_written(mcp_http.notes) == ["1", "2"]
