"""The inbox: everything waiting on a person across the sessions they may answer,
"not now", bulk approval of identical requests, the people an owner names to answer, and the
record of who decided, when and through which channel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from planboard import broadcast, selectors, services
from planboard.models import AgentRun, ChatSession, Decision, ToolCall
from tests.support.inbox import (
    waiting_approval,
    waiting_budget,
    waiting_confirmation,
    waiting_question,
)
from tests.support.web import XSS, api_client_for, client_for, page_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(db: Any) -> Any:
    """Accepts being named to answer by anyone (the default is teammates only)."""
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    services.answerer_consent_set(user=bob, named_by="anyone")
    return bob


def session_of(owner: Any, title: str = "Trip") -> ChatSession:
    return services.session_create(owner=owner, title=title)


def inbox(who: Any, **query: Any) -> dict[str, Any]:
    response = api_client_for(who).get("/api/inbox/", query)
    assert response.status_code == 200, response.content
    return response.json()


def token_client(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {services.token_issue(user=user).key}")
    return client


def test_every_kind_of_waiting_item_is_listed_with_what_it_asks(user: Any) -> None:
    call = waiting_approval(session_of(user, "Notes"), user, arguments={"text": XSS})
    confirm = waiting_confirmation(session_of(user, "Kyoto"), user)
    budget = waiting_budget(session_of(user, "Budget"), user)
    question = waiting_question(session_of(user, "Ask"), user, "Which dates suit you?")
    body = inbox(user)
    assert body["count"] == 4
    items = {item["key"]: item for item in body["results"]}
    approval = items[f"tool_call:{call.pk}"]
    assert approval["kind"] == "approval"
    assert approval["tool_call"]["tool_name"] == "notes__write_note"
    # Outside text arrives as data, unchanged: the page sets it as text.
    assert XSS.replace('"', '\\"') in approval["tool_call"]["arguments"]
    assert approval["actions"] == ["approve", "deny", "always_allow"]
    assert approval["url"] == f"/sessions/{call.session_id}/#tool-call-call_1"
    # A run's item is one wait of it: the first here.
    assert confirm.waits == budget.waits == question.waits == 1
    confirmation = items[f"run:{confirm.pk}:1"]
    assert confirmation["kind"] == "confirmation"
    assert confirmation["plan"]["name"] == "Kyoto trip"
    assert [s["name"] for s in confirmation["plan"]["subtasks"]] == [
        "Book flights",
        "Book a ryokan",
    ]
    assert confirmation["actions"] == ["confirm", "reply"]
    paused = items[f"run:{budget.pk}:1"]
    assert paused["kind"] == "budget"
    assert paused["budget"]["budget_usd"] == "0.0000"
    assert paused["actions"] == ["raise_budget", "reply"]
    asked = items[f"run:{question.pk}:1"]
    assert asked["kind"] == "question"
    assert asked["question"] == "Which dates suit you?"
    assert all(item["since"] for item in body["results"])


def test_others_see_nothing_and_anonymous_is_refused(user: Any, other_user: Any, lead: Any) -> None:
    waiting_approval(session_of(user), user)
    assert inbox(other_user) == {"count": 0, "results": []}
    # A lead reads the member's sessions but answers nothing of them.
    assert inbox(lead)["count"] == 0
    assert APIClient().get("/api/inbox/").status_code == 401


def test_decisions_record_who_when_and_the_channel(user: Any) -> None:
    first = waiting_approval(session_of(user, "Browser"), user)
    second = waiting_approval(session_of(user, "Api"), user)
    response = client_for(user).post(
        f"/api/sessions/{first.session_id}/tool-calls/call_1/decision/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["tool_call"]["decided_via"] == "browser"
    response = token_client(user).post(
        f"/api/sessions/{second.session_id}/tool-calls/call_1/decision/",
        {"decision": "deny", "note": "not now"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["tool_call"]["decided_via"] == "api"
    made = list(Decision.objects.order_by("id").values_list("decision", "channel", "user_id"))
    assert made == [("approve", "browser", user.pk), ("deny", "api", user.pk)]
    listed = api_client_for(user).get(f"/api/sessions/{second.session_id}/decisions/").json()
    assert [(d["decision"], d["user"], d["channel"]) for d in listed["results"]] == [
        ("deny", "alice", "api")
    ]
    assert listed["results"][0]["tool_call_id"] == "call_1"
    assert inbox(user)["count"] == 0


def test_confirm_reply_and_budget_raise_are_recorded(user: Any) -> None:
    confirm = waiting_confirmation(session_of(user, "Kyoto"), user)
    question = waiting_question(session_of(user, "Ask"), user, "Which dates?")
    budget = waiting_budget(session_of(user, "Budget"), user)
    api = api_client_for(user)
    posted = api.post(
        f"/api/sessions/{confirm.session_id}/messages/",
        {"content": "Yes, go ahead.", "intent": "confirm"},
        format="json",
    )
    assert posted.status_code == 202 and posted.json()["run"]["status"] == "queued"
    replied = api.post(
        f"/api/sessions/{question.session_id}/messages/", {"content": "May 3-5"}, format="json"
    )
    assert replied.status_code == 202
    raised = token_client(user).patch(
        f"/api/sessions/{budget.session_id}/", {"budget_usd": 5}, format="json"
    )
    assert raised.status_code == 200
    made = {(d.kind, d.decision, d.channel, d.user_id, d.run_id) for d in Decision.objects.all()}
    assert made == {
        ("confirmation", "confirm", "browser", user.pk, confirm.pk),
        ("question", "reply", "browser", user.pk, question.pk),
        ("budget", "raise_budget", "api", user.pk, budget.pk),
    }
    assert Decision.objects.get(kind="confirmation").plan_id is not None
    assert inbox(user)["count"] == 0


def test_confirming_when_nothing_waits_is_refused(user: Any) -> None:
    question = waiting_question(session_of(user), user, "Which dates?")
    response = api_client_for(user).post(
        f"/api/sessions/{question.session_id}/messages/",
        {"content": "Yes, go ahead.", "intent": "confirm"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["code"] == "already_decided"
    assert AgentRun.objects.get(pk=question.pk).status == "waiting_for_user"
    assert not Decision.objects.exists()


def test_writing_instead_of_deciding_records_the_denial(user: Any) -> None:
    call = waiting_approval(session_of(user), user)
    services.message_post(session_id=call.session_id, author=user, content="Use the pen instead")
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decided_via) == ("denied", user, "browser")
    assert Decision.objects.get().decision == "deny"


def test_not_now_hides_an_item_for_that_person_only(user: Any, bob: Any) -> None:
    call = waiting_approval(session_of(user), user)
    services.session_set_answerers(session_id=call.session_id, user=user, usernames=["bob"])
    key = f"tool_call:{call.pk}"
    api = api_client_for(user)
    response = api.post("/api/inbox/snooze/", {"key": key, "minutes": 30}, format="json")
    assert response.status_code == 200 and response.json()["until"]
    assert inbox(user)["count"] == 0
    assert [i["key"] for i in inbox(user, snoozed="true")["results"]] == [key]
    assert inbox(bob)["count"] == 1
    # Nothing was decided.
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    response = api.post("/api/inbox/snooze/", {"key": key, "minutes": 0}, format="json")
    assert response.status_code == 200 and response.json()["until"] is None
    assert inbox(user)["count"] == 1
    later = (timezone.now() + timedelta(hours=3)).isoformat()
    response = api.post("/api/inbox/snooze/", {"key": key, "until": later}, format="json")
    assert response.status_code == 200 and inbox(user)["count"] == 0
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert (
        api.post("/api/inbox/snooze/", {"key": key, "until": past}, format="json").status_code
        == 400
    )


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"key": "tool_call:999999", "minutes": 5}, 404),
        ({"key": "nonsense", "minutes": 5}, 404),
        ({"key": "run:1", "minutes": -1}, 400),
        ({"key": "run:1", "minutes": 99999999}, 400),
        ({"key": "run:1", "minutes": "5"}, 400),
        ({"key": "run:1", "until": "tomorrow"}, 400),
    ],
)
def test_not_now_refuses_bad_input(user: Any, body: dict[str, Any], status: int) -> None:
    response = api_client_for(user).post("/api/inbox/snooze/", body, format="json")
    assert response.status_code == status


def test_someone_elses_item_cannot_be_snoozed(user: Any, other_user: Any) -> None:
    call = waiting_approval(session_of(user), user)
    response = api_client_for(other_user).post(
        "/api/inbox/snooze/", {"key": f"tool_call:{call.pk}"}, format="json"
    )
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_bulk_approve_takes_identical_requests_only(user: Any) -> None:
    same = [waiting_approval(session_of(user, f"S{n}"), user) for n in range(2)]
    odd = waiting_approval(session_of(user, "Odd"), user, arguments={"text": "other"})
    api = api_client_for(user)
    keys = [f"tool_call:{c.pk}" for c in same]
    refused = api.post(
        "/api/inbox/bulk-approve/", {"keys": [*keys, f"tool_call:{odd.pk}"]}, format="json"
    )
    assert refused.status_code == 400
    assert set(ToolCall.objects.values_list("status", flat=True)) == {"pending"}
    approved = api.post("/api/inbox/bulk-approve/", {"keys": keys}, format="json")
    assert approved.status_code == 200
    assert [c["status"] for c in approved.json()["tool_calls"]] == ["approved", "approved"]
    assert Decision.objects.filter(decision="approve").count() == 2
    assert AgentRun.objects.filter(status="queued").count() == 2
    again = api.post("/api/inbox/bulk-approve/", {"keys": keys}, format="json")
    assert again.status_code == 400 and again.json()["code"] == "already_decided"
    assert api.post("/api/inbox/bulk-approve/", {"keys": []}, format="json").status_code == 400


def test_named_answerers_see_decide_and_lose_it_when_removed(
    user: Any, bob: Any, other_user: Any
) -> None:
    call = waiting_approval(session_of(user), user)
    url = f"/api/sessions/{call.session_id}/answerers/"
    assert api_client_for(bob).get(url).status_code == 404
    refused = api_client_for(other_user).put(url, {"usernames": ["mallory"]}, format="json")
    assert refused.status_code == 404
    unknown = api_client_for(user).put(url, {"usernames": ["nobody"]}, format="json")
    assert unknown.status_code == 400
    owner = api_client_for(user).put(url, {"usernames": ["alice"]}, format="json")
    assert owner.status_code == 400
    named = api_client_for(user).put(url, {"usernames": ["bob"]}, format="json")
    assert named.status_code == 200 and named.json() == {"usernames": ["bob"]}
    # Bob sees the session but cannot change who answers it.
    assert api_client_for(bob).get(url).json() == {"usernames": ["bob"]}
    assert api_client_for(bob).put(url, {"usernames": []}, format="json").status_code == 403
    assert inbox(bob)["count"] == 1
    decided = api_client_for(bob).post(
        f"/api/sessions/{call.session_id}/tool-calls/call_1/decision/",
        {"decision": "approve"},
        format="json",
    )
    assert decided.status_code == 200
    assert Decision.objects.get().user == bob
    assert api_client_for(user).put(url, {"usernames": []}, format="json").status_code == 200
    assert api_client_for(bob).get(f"/api/sessions/{call.session_id}/").status_code == 404


def test_inbox_changes_reach_the_people_concerned(
    user: Any, bob: Any, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    session = session_of(user)
    services.session_set_answerers(session_id=session.pk, user=user, usernames=["bob"])
    with django_capture_on_commit_callbacks(execute=True):
        call = waiting_approval(session, user)
    groups = {g for g, e in events.items if e["type"] == "inbox.changed"}
    assert groups == {broadcast.inbox_group(user.pk), broadcast.inbox_group(bob.pk)}
    assert broadcast.user_group(user.pk) not in groups
    events.items.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.tool_call_decide(
            session_id=session.pk, tool_call_id=call.tool_call_id, user=bob, decision="deny"
        )
    changed = [e for g, e in events.items if e["type"] == "inbox.changed"]
    assert changed and all(e["session_id"] == session.pk for e in changed)


def test_selector_marks_the_subtask_in_progress(user: Any) -> None:
    session = session_of(user)
    confirm = waiting_confirmation(session, user)
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    assert plan_id is not None
    first = selectors.plan_snapshot(plan_id=plan_id)["subtasks"][0]["id"]
    services.subtask_set_state(
        plan_id=plan_id, actor=services.Actor.person(user), subtask_id=first, state="in_progress"
    )
    # Started: no longer a confirmation, a question about the work in progress.
    item = selectors.inbox_item(user=user, key=selectors.run_key(confirm.pk, confirm.waits))
    assert item is not None and item["kind"] == "question"
    assert item["subtask"] == {"id": first, "name": "Book flights"}


def test_inbox_page_embeds_the_items_and_the_header_links_it(user: Any) -> None:
    call = waiting_approval(session_of(user, XSS), user, arguments={"text": XSS})
    response = client_for(user).get("/inbox/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="inbox-link"' in html and 'href="/inbox/"' in html
    # The session title and arguments travel as JSON data, never as markup.
    assert "<script>alert" not in html
    items = page_data(response)["items"]
    assert [i["key"] for i in items] == [f"tool_call:{call.pk}"]
    assert items[0]["session"]["title"] == XSS


def test_inbox_page_needs_a_login(client: Any) -> None:
    response = client.get("/inbox/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_review_page_shows_who_decided(user: Any, lead: Any) -> None:
    session = session_of(user)
    confirm = waiting_confirmation(session, user)
    services.message_post(
        session_id=session.pk, author=user, content="Yes, go ahead.", intent="confirm"
    )
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    response = client_for(lead).get(f"/history/plans/{plan_id}/")
    decided = page_data(response)["decisions"]
    assert [(d["decision"], d["user"], d["channel"], d["run_id"]) for d in decided] == [
        ("confirm", "alice", "browser", confirm.pk)
    ]


def test_admin_lists_decisions_to_staff_with_the_view_permission(
    user: Any, staff: Any, staff_admin: Any
) -> None:
    call = waiting_approval(session_of(user), user)
    services.tool_call_decide(
        session_id=call.session_id, tool_call_id=call.tool_call_id, user=user, decision="deny"
    )
    assert client_for(staff).get("/admin/planboard/decision/").status_code == 403
    page = client_for(staff_admin).get("/admin/planboard/decision/")
    assert page.status_code == 200 and b"notes__write_note" in page.content
    decision = Decision.objects.get()
    change = client_for(staff_admin).get(f"/admin/planboard/decision/{decision.pk}/change/")
    assert change.status_code == 200 and b'name="_save"' not in change.content


def test_the_inbox_reads_a_fixed_number_of_statements(user: Any) -> None:
    from tests.support import db

    def grow(count: int) -> int:
        for n in range(count):
            waiting_approval(session_of(user, f"A{n}"), user, call_id=f"call_{n}")
            waiting_confirmation(session_of(user, f"C{n}"), user)
            waiting_question(session_of(user, f"Q{n}"), user, "Which dates?")
            services.elicitation_open(
                session_id=session_of(user, f"E{n}").pk,
                run_id=None,
                tool_call_id=None,
                toolset_id=None,
                toolset_name="hotels",
                mode="form",
                message="Which room?",
                requested_schema={"type": "object", "properties": {"room": {"type": "string"}}},
                timeout_seconds=600,
            )
        return db.count_statements(lambda: selectors.inbox_items(user=user))

    # The calls, the tools' questions, the waiting runs, their plans' subtasks (states and the
    # one in progress), the agent's last answers, the sessions, the snoozes: however many
    # items there are.
    assert grow(1) == grow(5) == 8
    assert len(selectors.inbox_items(user=user)) == 24


def test_session_page_lets_named_answerers_answer_but_not_edit(
    user: Any, bob: Any, lead: Any
) -> None:
    session = session_of(user)
    services.session_set_answerers(session_id=session.pk, user=user, usernames=["bob"])
    mine = page_data(client_for(user).get(f"/sessions/{session.pk}/"))
    assert (mine["can_edit"], mine["can_answer"], mine["answerers"]) == (True, True, ["bob"])
    named = page_data(client_for(bob).get(f"/sessions/{session.pk}/"))
    assert (named["can_edit"], named["can_answer"]) == (False, True)
    reader = page_data(client_for(lead).get(f"/sessions/{session.pk}/"))
    assert (reader["can_edit"], reader["can_answer"]) == (False, False)
    # Answering what waits works for bob; the session's settings stay the owner's.
    waiting_question(session, user, "Which dates?")
    api = api_client_for(bob)
    posted = api.post(f"/api/sessions/{session.pk}/messages/", {"content": "Hi"}, format="json")
    assert posted.status_code == 202
    assert (
        api.patch(f"/api/sessions/{session.pk}/", {"title": "x"}, format="json").status_code == 403
    )
    assert (
        api_client_for(lead)
        .post(f"/api/sessions/{session.pk}/messages/", {"content": "Hi"}, format="json")
        .status_code
        == 403
    )
