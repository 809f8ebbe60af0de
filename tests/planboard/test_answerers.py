"""The people an owner names to answer a session: they answer what waits (approve or deny a
call, confirm a plan, reply to a waiting run) and nothing more; removing them takes back what
they granted; and inactive people are nobody — not recipients, not answerers, and an inactive
owner's session runs nothing. Consent to be named: test_answerer_consent.py."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.exceptions import Forbidden, PlanError
from planboard.models import (
    AgentRun,
    ChatSession,
    Notification,
    ToolCall,
    Toolset,
)
from tests.support.inbox import (
    answerer,
    deactivate,
    running,
    shared_session,
    waiting_approval,
    waiting_confirmation,
    waiting_question,
)
from tests.support.web import api_client_for, client_for, page_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(db: Any) -> Any:
    """Accepts being named by anyone."""
    return answerer("bob")


def subscribe(who: Any) -> None:
    services.notification_settings_update(
        user=who, kinds=["approval", "question"], email=True, delay_seconds=0
    )


# --- inactive people are nobody ------------------------------------------------------------


def test_a_deactivated_answerer_is_no_recipient_has_no_inbox_and_is_not_listed(
    user: Any, bob: Any, django_capture_on_commit_callbacks: Any
) -> None:
    session = shared_session(user, "bob")
    subscribe(bob)
    deactivate(bob)
    with django_capture_on_commit_callbacks(execute=True):
        waiting_approval(session, user)
    assert Notification.objects.filter(user=bob).count() == 0
    assert selectors.inbox_recipients(session_id=session.pk) == [user.pk]
    assert selectors.inbox_items(user=bob) == []
    assert list(selectors.sessions_answerable_by(bob)) == []
    assert selectors.session_answerers(session_id=session.pk) == []
    assert not selectors.is_answerer(bob, session.pk)


def test_a_notification_queued_before_deactivation_is_skipped_not_sent(
    user: Any, bob: Any, django_capture_on_commit_callbacks: Any
) -> None:
    session = shared_session(user, "bob")
    subscribe(bob)
    with django_capture_on_commit_callbacks(execute=True):
        waiting_approval(session, user)
    row = Notification.objects.get(user=bob)
    deactivate(bob)
    assert services.notification_claim(notification_id=row.pk) is None
    row.refresh_from_db()
    assert (row.status, row.attempts) == (Notification.Status.SKIPPED, 0)


def test_an_inactive_owners_session_has_no_recipients_and_no_inbox(
    user: Any, bob: Any, django_capture_on_commit_callbacks: Any
) -> None:
    session = shared_session(user, "bob")
    waiting_approval(session, user)
    deactivate(user)
    assert selectors.inbox_recipients(session_id=session.pk) == []
    assert selectors.inbox_items(user=bob) == []
    assert not selectors.can_answer_session(bob, user.pk, session_id=session.pk)


# --- what an answerer may do -----------------------------------------------------------------


def test_an_answerer_cannot_start_a_run_in_an_idle_session(user: Any, bob: Any) -> None:
    session = shared_session(user, "bob")
    with pytest.raises(Forbidden, match="only answers what the session waits for"):
        services.message_post(session_id=session.pk, author=bob, content="Delete everything")
    response = api_client_for(bob).post(
        f"/api/sessions/{session.pk}/messages/", {"content": "Delete everything"}, format="json"
    )
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert not AgentRun.objects.filter(session=session).exists()
    # The owner starts it as ever.
    _, run = services.message_post(session_id=session.pk, author=user, content="Go")
    assert run.status == AgentRun.Status.QUEUED


def test_an_answerer_cannot_write_into_a_running_run_or_one_waiting_for_approval(
    user: Any, bob: Any
) -> None:
    session = shared_session(user, "bob")
    running(session, user)
    with pytest.raises(Forbidden):
        services.message_post(session_id=session.pk, author=bob, content="Also do this")
    other = shared_session(user, "bob")
    call = waiting_approval(other, user)
    with pytest.raises(Forbidden):
        services.message_post(session_id=other.pk, author=bob, content="Instead do this")
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.PENDING


def test_an_answerer_replies_to_a_question_and_confirms_a_plan(user: Any, bob: Any) -> None:
    session = shared_session(user, "bob")
    waiting_question(session, user, "Which dates?")
    api = api_client_for(bob)
    replied = api.post(
        f"/api/sessions/{session.pk}/messages/", {"content": "In May"}, format="json"
    )
    assert replied.status_code == 202, replied.content
    other = shared_session(user, "bob")
    run = waiting_confirmation(other, user)
    confirmed = api.post(
        f"/api/sessions/{other.pk}/messages/",
        {"content": "Yes", "intent": "confirm"},
        format="json",
    )
    assert confirmed.status_code == 202, confirmed.content
    assert AgentRun.objects.get(pk=run.pk).status == AgentRun.Status.QUEUED


def test_an_answers_text_carries_no_attached_resources(user: Any, bob: Any) -> None:
    session = shared_session(user, "bob")
    waiting_question(session, user, "Which file?")
    with pytest.raises(Forbidden, match="attach"):
        services.message_post(
            session_id=session.pk,
            author=bob,
            content="This one",
            resources=[{"toolset_id": 1, "uri": "file:///secret"}],
        )


def test_an_answerer_decides_calls_but_cannot_always_allow(user: Any, bob: Any) -> None:
    session = shared_session(user, "bob")
    first = waiting_approval(session, user, call_id="c1")
    with pytest.raises(Forbidden, match="always allow"):
        services.tool_call_decide(
            session_id=session.pk,
            tool_call_id="c1",
            user=bob,
            decision="approve",
            always_allow=True,
        )
    url = f"/api/sessions/{session.pk}/tool-calls/c1/decision/"
    refused = api_client_for(bob).post(
        url, {"decision": "approve", "always_allow": True}, format="json"
    )
    assert refused.status_code == 403
    assert ToolCall.objects.get(pk=first.pk).status == ToolCall.Status.PENDING
    # What the inbox offers bob matches: approve and deny, not "always allow".
    [item] = selectors.inbox_items(user=bob)
    assert item["actions"] == ["approve", "deny"]
    [owners] = selectors.inbox_items(user=user)
    assert owners["actions"] == ["approve", "deny", "always_allow"]
    approved = api_client_for(bob).post(url, {"decision": "approve"}, format="json")
    assert approved.status_code == 200, approved.content
    record = ToolCall.objects.get(pk=first.pk)
    assert (record.status, record.always_allow, record.decided_by) == ("approved", False, bob)


def test_staff_allowed_to_change_sessions_may_always_allow(user: Any, staff_admin: Any) -> None:
    session = services.session_create(owner=user, title="Theirs")
    waiting_approval(session, user, call_id="c1")
    record = services.tool_call_decide(
        session_id=session.pk,
        tool_call_id="c1",
        user=staff_admin,
        decision="approve",
        always_allow=True,
    )
    assert record.always_allow


def test_the_session_page_offers_an_answerer_only_what_the_server_allows(
    user: Any, bob: Any
) -> None:
    session = shared_session(user, "bob")
    mine = page_data(client_for(user).get(f"/sessions/{session.pk}/"))
    assert (mine["can_answer"], mine["can_write"]) == (True, True)
    theirs = page_data(client_for(bob).get(f"/sessions/{session.pk}/"))
    assert (theirs["can_answer"], theirs["can_write"]) == (True, False)


def test_an_answerer_gets_no_prompt_from_the_owners_servers(user: Any, bob: Any) -> None:
    """A prompt is asked of the server with the owner's credentials, for the owner's
    composer: not something an answer needs."""
    session = shared_session(user, "bob")
    body = {"toolset_id": 1, "name": "simple-prompt"}
    url = f"/api/sessions/{session.pk}/prompts/get/"
    assert api_client_for(bob).post(url, body, format="json").status_code == 403
    owners = api_client_for(user).post(url, body, format="json")
    assert owners.status_code == 400 and owners.json()["code"] == "unknown_prompt"


def test_a_stale_go_ahead_from_an_answerer_says_already_decided(user: Any, bob: Any) -> None:
    """An action link's confirm that comes after someone else's is "already decided" for an
    answerer as for the owner (not a refusal)."""
    session = shared_session(user, "bob")
    waiting_confirmation(session, user)
    services.message_post(session_id=session.pk, author=user, content="Go", intent="confirm")
    with pytest.raises(PlanError) as caught:
        services.message_post(session_id=session.pk, author=bob, content="Go", intent="confirm")
    assert caught.value.code == "already_decided"


# --- removal takes back what they granted ----------------------------------------------------


def _granted_by(session: ChatSession, who: Any, toolset: Toolset) -> ToolCall:
    """An "always allow" `who` gave (as answerers could before only owners and staff could)."""
    record = services.tool_call_open(
        session_id=session.pk,
        run_id=None,
        tool_call_id=f"grant-{who.pk}",
        tool_name="files__delete",
        toolset_id=toolset.pk,
        tool="delete",
        arguments={"path": "a.txt"},
        read_only=False,
        status=ToolCall.Status.PENDING,
    )
    ToolCall.objects.filter(pk=record.pk).update(
        status=ToolCall.Status.APPROVED, always_allow=True, decided_by=who
    )
    return record


@pytest.fixture
def files(staff: Any) -> Toolset:
    return services.toolset_create(
        user=staff, name="files", kind="http", url="https://tools.example.com/mcp"
    )


def allowed(session: ChatSession) -> set[tuple[int, str]]:
    _, pairs, _ = selectors.session_tools_and_call_flags(session_id=session.pk)
    return pairs


def test_removing_an_answerer_revokes_their_always_allow(
    user: Any, bob: Any, files: Toolset
) -> None:
    session = shared_session(user, "bob")
    _granted_by(session, bob, files)
    assert allowed(session) == {(files.pk, "delete")}
    assert selectors.tool_always_allowed(session_id=session.pk, toolset_id=files.pk, tool="delete")
    services.session_set_answerers(session_id=session.pk, user=user, usernames=[])
    assert allowed(session) == set()
    assert not selectors.tool_always_allowed(
        session_id=session.pk, toolset_id=files.pk, tool="delete"
    )


def test_removal_keeps_the_owners_and_the_remaining_answerers_grants(
    user: Any, bob: Any, files: Toolset
) -> None:
    carol = answerer("carol")
    session = shared_session(user, "bob", "carol")
    _granted_by(session, user, files)
    carols = _granted_by(session, carol, files)
    bobs = _granted_by(session, bob, files)
    services.session_set_answerers(session_id=session.pk, user=user, usernames=["carol"])
    kept = set(ToolCall.objects.filter(always_allow=True).values_list("decided_by", flat=True))
    assert kept == {user.pk, carol.pk}
    assert ToolCall.objects.get(pk=bobs.pk).always_allow is False
    assert ToolCall.objects.get(pk=carols.pk).always_allow is True


def test_the_migration_revokes_grants_made_by_people_other_than_the_owner(
    user: Any, bob: Any, files: Toolset
) -> None:
    from importlib import import_module

    from django.apps import apps

    migration = import_module("planboard.migrations.0018_people")
    session = shared_session(user, "bob")
    owners = _granted_by(session, user, files)
    bobs = _granted_by(session, bob, files)
    migration.revoke_grants_of_others(apps, None)
    assert ToolCall.objects.get(pk=owners.pk).always_allow is True
    assert ToolCall.objects.get(pk=bobs.pk).always_allow is False


# --- an inactive owner's session runs nothing ------------------------------------------------


def test_an_inactive_owners_session_starts_and_resumes_no_run(user: Any, staff_admin: Any) -> None:
    session = services.session_create(owner=user, title="Left")
    call = waiting_approval(session, user)
    queued = services.session_create(owner=user, title="Queued")
    _, run = services.message_post(session_id=queued.pk, author=user, content="Go")
    deactivate(user)
    # Nobody writes a new run into it, staff included.
    with pytest.raises(PlanError, match="deactivated"):
        services.message_post(session_id=session.pk, author=staff_admin, content="Go on")
    # A decision would re-queue the paused run: refused.
    with pytest.raises(PlanError, match="deactivated"):
        services.tool_call_decide(
            session_id=session.pk,
            tool_call_id=call.tool_call_id,
            user=staff_admin,
            decision="approve",
        )
    assert AgentRun.objects.get(pk=call.run_id).status == AgentRun.Status.WAITING_FOR_APPROVAL
    # A run queued before the owner left does not start when a worker takes it.
    started = services.run_start(run_id=run.pk, worker="w")
    assert started.status == AgentRun.Status.FAILED and "deactivated" in started.error


def test_an_inactive_owners_per_person_credentials_are_not_used(user: Any, staff: Any) -> None:
    toolset = services.toolset_create(
        user=staff,
        name="remote",
        kind="http",
        url="https://tools.example.com/mcp",
        access="per_person",
    )
    services.toolset_credential_set(toolset_id=toolset.pk, user=user, headers={"X-Api-Key": "k"})
    session = services.session_create(owner=user, title="Mine")
    called = selectors.toolset_as_called(Toolset.objects.get(pk=toolset.pk), session_id=session.pk)
    assert called is not None and called.headers == {"X-Api-Key": "k"}
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk], user=user)
    assert selectors.tool_sessions_wanted(pairs=[(session.pk, toolset.pk)]) == {
        (session.pk, toolset.pk)
    }
    deactivate(user)
    assert (
        selectors.toolset_as_called(Toolset.objects.get(pk=toolset.pk), session_id=session.pk)
        is None
    )
    # The live MCP sessions of the conversation close at the host's next sweep.
    assert selectors.tool_sessions_wanted(pairs=[(session.pk, toolset.pk)]) == set()
