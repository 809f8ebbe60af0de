"""A 2026-07-28 server's `input_required` answer parks the tool call durably, against the
SDK's real server (`asking_server` in tests/support/mcp_revisions.py): its questions become
inbox items, the run gives up its worker, and the answer — given through the service, the
inbox's signed link, after the run host that asked is gone — sends the call again with the
answers and the server's sealed `requestState`, once. Declines and cancels reach the server;
expiry and the round limit end the call with a clear result; the state is stored encrypted
and shown to nobody."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents import external_tools
from planboard import secret_fields, selectors, services
from planboard.exceptions import PlanError
from planboard.models import (
    AgentRun,
    ChatSession,
    Decision,
    Elicitation,
    InputRound,
    Notification,
    ToolCall,
    Toolset,
)
from tests.support import db
from tests.support.action_links import SITE, links_of, subscribe, token_of
from tests.support.mcp_revisions import (
    MODERN,
    STATE_MARK,
    RevisionServer,
    asking_server,
    revision_toolset,
)
from tests.support.runs import HostLoop, post, record, result_of, resumed
from tests.support.scripted import ScriptedModel, call, say, tool_calls

pytestmark = pytest.mark.django_db


@pytest.fixture
def server() -> Iterator[RevisionServer]:
    with RevisionServer("modern", build=asking_server) as served:
        yield served


@pytest.fixture
def remote(superuser: Any, session: ChatSession, server: RevisionServer) -> Toolset:
    toolset = revision_toolset(superuser, server)
    services.toolset_update(
        toolset_id=toolset.pk, user=None, tool_policies={"order": "auto", "pester": "auto"}
    )
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    return toolset


def parked(session: ChatSession, user: Any, model: ScriptedModel, **arguments: Any) -> AgentRun:
    """A run whose `remote__order` call its server answered with questions; its run host
    ends with the block (nothing of it is left in memory)."""
    tool = arguments.pop("tool", "order")
    model.script.extend([tool_calls(call(f"remote__{tool}", call_id="o1", **arguments))])
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL, run.error
    assert record(session, "o1").status == ToolCall.Status.INPUT
    return run


def question(**filters: Any) -> Elicitation:
    return Elicitation.objects.get(status=Elicitation.Status.PENDING, **filters)


def test_the_question_waits_in_the_inbox_and_its_answer_resumes_the_call_elsewhere(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    server: RevisionServer,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, item="apples")
    asked = question()
    assert (asked.message, asked.input_key, asked.mode) == ("How many apples?", "count", "form")
    [item] = [i for i in selectors.inbox_items(user=user) if i["key"] == f"elicitation:{asked.pk}"]
    assert item["elicitation"]["message"] == "How many apples?"
    # The server's state, stored for the call's next send only, encrypted at rest.
    parked_round = InputRound.objects.get()
    sealed = parked_round.carried["state"]
    assert sealed and STATE_MARK not in sealed  # the server sealed it; we echo it as is
    row = db.fetch_one("SELECT carried FROM planboard_inputround WHERE id = %s", [parked_round.pk])
    assert row is not None
    raw = str(row[0])
    assert raw.startswith(secret_fields.PREFIX) and sealed not in raw and '"state"' not in raw
    # Nobody is shown it: not people (inbox, session page), not the model.
    shown = json.dumps([item, selectors.serialize_elicitation(asked)])
    assert sealed not in shown and STATE_MARK not in shown

    services.elicitation_answer(
        elicitation_id=asked.pk, user=user, action="accept", content={"count": 3}
    )
    scripted_model.script.append(say("Ordered."))
    finished = resumed(run)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    assert result_of(session, "o1") == "ordered 3 apples"
    retry = server.sent[-1]
    assert retry["requestState"] == sealed
    assert retry["inputResponses"] == {"count": {"action": "accept", "content": {"count": 3}}}
    assert set(server.versions_of("tools/call")) == {MODERN}
    parked_round.refresh_from_db()
    assert (parked_round.status, parked_round.carried) == (InputRound.Status.CONSUMED, None)
    assert record(session, "o1").status == ToolCall.Status.SUCCEEDED
    told_model = json.dumps(scripted_model.requests)
    assert sealed not in told_model and STATE_MARK not in told_model

    # The same answer again changes nothing; the call is not sent a third time.
    calls_sent = len(server.sent)
    with pytest.raises(PlanError) as again:
        services.elicitation_answer(
            elicitation_id=asked.pk, user=user, action="accept", content={"count": 9}
        )
    assert again.value.code == "already_decided"
    assert (
        external_tools.advance_call(
            run=finished, call={"id": "o1", "function": {"name": "remote__order"}}, held=False
        )
        is not None
    )
    assert len(server.sent) == calls_sent


def test_decline_and_cancel_reach_the_server(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    server: RevisionServer,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, item="ticket")
    count, login = question(input_key="count"), question(input_key="login")
    assert (login.mode, login.url) == ("url", "https://tickets.example/login")
    services.elicitation_answer(elicitation_id=count.pk, user=user, action="decline")
    run.refresh_from_db()
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL  # the sign-in still waits
    services.elicitation_answer(elicitation_id=login.pk, user=user, action="cancel")
    scripted_model.script.append(say("Not ordered."))
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert server.sent[-1]["inputResponses"] == {
        "count": {"action": "decline"},
        "login": {"action": "cancel"},
    }
    assert result_of(session, "o1") == 'not ordered: {"count": "decline", "login": "cancel"}'
    assert Decision.objects.filter(decision="decline", user=user).count() == 1


def test_a_signed_link_declines_once_days_later(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    server: RevisionServer,
    scripted_model: ScriptedModel,
    settings: Any,
) -> None:
    settings.PLANBOARD_ACTION_LINK_HOURS = 24 * 7
    settings.PLANBOARD_PUBLIC_URL = SITE
    user.email = "owner@example.com"
    user.save(update_fields=["email"])
    subscribe(user, Decision.Kind.ELICITATION)
    run = parked(session, user, scripted_model, item="pears")
    asked = question()
    notification = Notification.objects.get(user=user, item_key=f"elicitation:{asked.pk}")
    links = links_of(notification)
    assert "accept" not in links  # an answer needs the form
    token = token_of(links["decline"])
    assert services.action_link_use(token=token)[0] == "decided"
    assert services.action_link_use(token=token)[0] == "used"  # a replay does nothing
    assert Decision.objects.filter(elicitation=asked, decision="decline").count() == 1
    scripted_model.script.append(say("Fine."))
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "o1") == 'not ordered: {"count": "decline"}'
    assert sum(1 for sent in server.sent if "inputResponses" in sent) == 1


def test_an_unanswered_question_expires_and_the_call_fails_saying_so(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    server: RevisionServer,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, item="plums")
    past = timezone.now() - timedelta(seconds=1)
    InputRound.objects.update(expires_at=past)
    Elicitation.objects.update(expires_at=past)
    assert services.input_rounds_expire() == [run.pk]
    assert services.input_rounds_expire() == []
    asked = Elicitation.objects.get()
    assert asked.status == Elicitation.Status.EXPIRED
    assert InputRound.objects.get().carried is None  # nothing of the state is kept
    with pytest.raises(PlanError):
        services.elicitation_answer(
            elicitation_id=asked.pk, user=user, action="accept", content={"count": 1}
        )
    sent = len(server.sent)
    scripted_model.script.append(say("It timed out."))
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "o1") == external_tools.INPUT_EXPIRED
    assert record(session, "o1").status == ToolCall.Status.FAILED
    assert len(server.sent) == sent  # not sent again


def test_a_server_that_keeps_asking_hits_the_round_limit(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    server: RevisionServer,
    scripted_model: ScriptedModel,
    settings: Any,
) -> None:
    settings.PLANBOARD_MCP_INPUT_ROUNDS = 2
    run = parked(session, user, scripted_model, tool="pester")
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="accept")
    run.refresh_from_db()
    with HostLoop() as host:
        run = host.drive(run)
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert question().message == "Still there? (2)"
    assert InputRound.objects.filter(status=InputRound.Status.WAITING).get().number == 2
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="accept")
    scripted_model.script.append(say("It would not stop."))
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "o1") == (
        "Error: toolset 'remote': the tool 'pester' failed: its server asked for input more "
        "than 2 times; the call was given up"
    )


def test_a_cancelled_run_gives_up_the_question(
    session: ChatSession,
    user: Any,
    remote: Toolset,
    scripted_model: ScriptedModel,
) -> None:
    parked(session, user, scripted_model, item="figs")
    services.run_cancel(session_id=session.pk)
    assert Elicitation.objects.get().status == Elicitation.Status.CANCELLED
    assert InputRound.objects.get().status == InputRound.Status.VOID
    assert InputRound.objects.get().carried is None
    assert not [i for i in selectors.inbox_items(user=user) if i["kind"] == "elicitation"]
