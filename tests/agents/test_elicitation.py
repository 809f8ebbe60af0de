"""Elicitation end to end: a server asks a person during a run's tool call; the
question appears on the session (API) and in the inbox, a person answers through REST, and
the tool result the model gets carries the answer. Unanswered in time: the server gets
`decline`; a run cancel: `cancel`; the tool timeout does not cut a person short.

Against the test server (`ask`) and the pinned reference "everything" server
(`trigger-elicitation-request`), both real stdio children in a live session. The runs are
driven on a stand-in run host (`HostLoop`) whose database units run on the test's thread: a
person's answer is given from inside the worker's poll (`answer_when_asked`), the only place a
test thread can act while the run waits, through the same REST endpoint a page uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Decision, Elicitation, Toolset
from tests.support.elicitation import answer_when_asked, rest_answer
from tests.support.mcp_revisions import RevisionServer, revision_toolset
from tests.support.mcp_servers import (
    HttpServer,
    everything_server_argv,
    http_toolset,
)
from tests.support.runs import HostLoop, post, result_of
from tests.support.scripted import Action, ScriptedModel, call, say, tool_calls
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def asking(superuser: Any, session: ChatSession) -> Iterator[Toolset]:
    # A server from before 2026-07-28: its question comes mid-call, and the call waits for
    # the answer (a 2026-07-28 server's parks the call: test_mcp_input_required.py).
    with RevisionServer("handshake") as server:
        toolset = revision_toolset(superuser, server, name="asking")
        services.toolset_update(toolset_id=toolset.pk, user=None, tool_policies={"ask": "auto"})
        services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
        yield toolset


def test_the_owner_answers_the_test_servers_form_and_the_model_reads_it(
    session: ChatSession,
    user: Any,
    asking: Toolset,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted_model.script.extend(
        [tool_calls(call("asking__ask", call_id="q1", mode="form")), say("Booked.")]
    )
    checks: list[Any] = []
    content = {"city": "Kyoto", "nights": 3, "breakfast": True}
    answer_when_asked(
        monkeypatch, rest_answer(user, {"action": "accept", "content": content}, checks)
    )
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    [(listed, inbox)] = checks
    assert listed[0]["message"] == "Which city, and how many nights?"
    assert listed[0]["tool_call_id"] == "q1" and listed[0]["toolset"] == "asking"
    assert listed[0]["requested_schema"]["required"] == ["city", "nights"]
    assert [i["key"] for i in inbox] == [f"elicitation:{listed[0]['id']}"]

    text = result_of(session, "q1")
    assert text == "accept: " + json.dumps(content, sort_keys=True)
    # The model's next request carries that result.
    assert any(m.get("content") == text for m in scripted_model.requests[-1])
    row = Elicitation.objects.get()
    assert (row.status, row.answered_by, row.content) == ("accepted", user, content)
    assert row.tool_call is not None and row.tool_call.status == "succeeded"
    assert Decision.objects.filter(elicitation=row, decision="accept", user=user).exists()


def test_the_reference_servers_elicitation_is_answered_through_rest(
    superuser: Any,
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node, script, mode = everything_server_argv()
    toolset = services.toolset_create(
        user=superuser, name="everything", kind="stdio", command=node, args=[script, mode]
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    tools = set(toolset.tools.values_list("name", flat=True))
    # Listed only to clients that can elicit: discovery says Planboard can.
    assert "trigger-elicitation-request" in tools
    services.toolset_update(
        toolset_id=toolset.pk,
        user=None,
        tool_policies={"trigger-elicitation-request": "auto"},
    )
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    scripted_model.script.extend(
        [
            tool_calls(call("everything__trigger-elicitation-request", call_id="e1")),
            say("Thanks."),
        ]
    )
    checks: list[Any] = []
    content = {
        "name": "Ann Example",
        "check": True,
        "email": "ann@example.com",
        "integer": 7,
        "untitledMultipleSelectEnum": ["Piano"],
        "titledSingleSelectEnum": "hero-3",
    }
    answer_when_asked(
        monkeypatch, rest_answer(user, {"action": "accept", "content": content}, checks)
    )
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    [(listed, inbox)] = checks
    schema = listed[0]["requested_schema"]
    assert schema["properties"]["titledSingleSelectEnum"]["oneOf"][2]["title"] == "Wonder Woman"
    assert inbox[0]["kind"] == "elicitation"

    text = result_of(session, "e1")
    assert "User provided the requested information" in text
    assert "- Name: Ann Example" in text and "- Favorite Integer: 7" in text
    assert '"titledSingleSelectEnum": "hero-3"' in text


def test_nobody_answers_in_time_the_server_is_told_decline(
    session: ChatSession,
    user: Any,
    asking: Toolset,
    scripted_model: ScriptedModel,
    settings: Any,
) -> None:
    settings.PLANBOARD_ELICITATION_TIMEOUT = 1
    scripted_model.script.extend([tool_calls(call("asking__ask", call_id="q1")), say("Ok.")])
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "q1") == "decline: null"
    row = Elicitation.objects.get()
    assert row.status == "expired" and row.answered_by is None
    decision = Decision.objects.get(elicitation=row)
    assert (decision.decision, decision.user, decision.channel) == ("decline", None, "expiry")
    assert selectors.inbox_items(user=user) == []


def test_the_tool_timeout_stops_while_a_person_answers(
    session: ChatSession,
    user: Any,
    asking: Toolset,
    scripted_model: ScriptedModel,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server is started by a first call under a generous limit (a start on a busy
    # machine is not what is measured); the question's call then gets a short one.
    settings.PLANBOARD_TOOL_TIMEOUT = 60

    def shorten_the_limit(messages: list[dict[str, Any]]) -> None:
        settings.PLANBOARD_TOOL_TIMEOUT = 4

    scripted_model.script.extend(
        [
            tool_calls(call("asking__echo", call_id="e0", text="warm")),
            Action(shorten_the_limit),
            tool_calls(call("asking__ask", call_id="q1")),
            say("Ok."),
        ]
    )
    checks: list[Any] = []
    body = {"action": "accept", "content": {"city": "Oslo", "nights": 1}}
    seen = answer_when_asked(monkeypatch, rest_answer(user, body, checks), after=5.5)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "e0") == "warm"
    assert seen[-1]["at"] >= 5.5  # answered past the tool's own limit
    assert result_of(session, "q1") == 'accept: {"city": "Oslo", "nights": 1}'


def test_a_run_cancel_ends_the_wait_with_cancel(
    session: ChatSession,
    user: Any,
    asking: Toolset,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted_model.script.extend([tool_calls(call("asking__ask", call_id="q1"))])

    def stop(row: Elicitation) -> None:
        response = api_client_for(user).post(f"/api/sessions/{row.session_id}/cancel/")
        assert response.status_code == 200, response.json()

    answer_when_asked(monkeypatch, stop)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.CANCELLED
    assert result_of(session, "q1") == "cancel: null"
    assert Elicitation.objects.get().status == "cancelled"


def test_url_mode_is_accepted_and_a_form_outside_the_rules_is_refused(
    session: ChatSession,
    user: Any,
    asking: Toolset,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(call("asking__ask", call_id="u1", mode="url")),
            tool_calls(call("asking__ask", call_id="b1", mode="bad")),
            say("Done."),
        ]
    )
    checks: list[Any] = []
    answer_when_asked(monkeypatch, rest_answer(user, {"action": "accept"}, checks))
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    [(listed, _)] = checks
    assert listed[0]["mode"] == "url"
    assert listed[0]["url"] == "https://auth.example.com/connect?state=abc"
    assert result_of(session, "u1") == "accept: null"
    # The nested form never reached a person: the server was told it cannot be shown.
    refused = result_of(session, "b1")
    assert refused.startswith("Error:") and "not one Planboard can show" in refused
    assert Elicitation.objects.count() == 1


def test_over_streamable_http_a_slow_answer_is_still_delivered(
    staff_admin: Any,
    session: ChatSession,
    user: Any,
    mcp_http: HttpServer,
    scripted_model: ScriptedModel,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The call's stream stays silent while the person thinks: longer than the tool timeout
    # (which also bounds the HTTP client's reads), and still the answer arrives.
    settings.PLANBOARD_TOOL_TIMEOUT = 4
    toolset = http_toolset(staff_admin, mcp_http, name="remote")
    services.toolset_update(toolset_id=toolset.pk, user=None, tool_policies={"ask": "auto"})
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    scripted_model.script.extend([tool_calls(call("remote__ask", call_id="h1")), say("Ok.")])
    checks: list[Any] = []
    body = {"action": "accept", "content": {"city": "Lima", "nights": 2, "breakfast": False}}
    seen = answer_when_asked(monkeypatch, rest_answer(user, body, checks), after=5.5)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert seen[-1]["at"] >= 5.5
    assert result_of(session, "h1") == ('accept: {"breakfast": false, "city": "Lima", "nights": 2}')
