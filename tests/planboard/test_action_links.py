"""Action links bound to the exact wait they were made for: a run that waits again is a new
item (new notifications, new links), a plan changed since the link was made is not
confirmed through it, any decision spends everyone's links, the page shows what it confirms,
tokens stay out of logs, some tools are decided only by someone signed in, and a link closed
by expiry says so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from planboard import selectors, services, tasks
from planboard.exceptions import PlanError
from planboard.models import (
    ActionLink,
    AgentRun,
    ChatSession,
    Decision,
    Notification,
    ToolCall,
)
from planboard.services import Actor
from tests.support.action_links import current_plan, links_of, subscribe, token_of
from tests.support.inbox import answerer, running, waiting_approval, waiting_confirmation
from tests.support.web import XSS, client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(db: Any) -> Any:
    return answerer("bob")


@pytest.fixture
def shared(alice: Any, bob: Any) -> ChatSession:
    """Alice's session; bob may answer it."""
    session = services.session_create(owner=alice, title="Offsite")
    services.session_set_answerers(session_id=session.pk, user=alice, usernames=["bob"])
    return session


# --- a link confirms the wait and the plan it was made for, nothing later -----------------


def test_an_old_confirmation_link_never_confirms_a_revised_plan(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(bob, "confirmation")
    with capture(execute=True):
        run = waiting_confirmation(shared, alice, name="Team offsite")
    [first] = Notification.objects.filter(user=bob)
    old = links_of(first)
    # Alice answers in the app instead; the agent adds a step and waits again, same run.
    with capture(execute=True):
        services.message_post(session_id=shared.pk, author=alice, content="Add the deposit")
        services.run_start(run_id=run.pk, worker="test")
        services.subtask_add(
            plan_id=current_plan(shared).pk,
            actor=Actor.agent(run),
            name="Wire 50000 USD to account 12345",
        )
        services.message_record_agent(
            session_id=shared.pk, run_id=run.pk, role="assistant", content="Shall I start?"
        )
        services.run_finish(run_id=run.pk, status="waiting_for_user")
    # The second wait is a new item: bob is told again, with new links.
    rows = list(Notification.objects.filter(user=bob).order_by("id"))
    assert len(rows) == 2 and rows[0].item_key != rows[1].item_key
    assert selectors.inbox_item(user=bob, key=rows[1].item_key) is not None
    assert selectors.inbox_item(user=bob, key=rows[0].item_key) is None
    # The old link decides nothing, whatever the page or the POST.
    page = client.get(old["confirm"])
    assert page.status_code == 409 and b"Wire 50000" not in page.content
    used = client.post(old["confirm"])
    assert used.status_code == 409
    assert AgentRun.objects.get(pk=run.pk).status == "waiting_for_user"
    assert not Decision.objects.filter(decision="confirm").exists()
    # The new link shows the revised plan, step by step, and confirms it.
    new = links_of(rows[1])
    assert new["confirm"] != old["confirm"]
    shown = client.get(new["confirm"])
    assert shown.status_code == 200 and b"Wire 50000 USD to account 12345" in shown.content
    assert client.post(new["confirm"]).status_code == 200
    assert AgentRun.objects.get(pk=run.pk).status == "queued"


def test_a_plan_changed_during_the_same_wait_is_not_confirmed_by_the_old_link(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(bob, "confirmation")
    with capture(execute=True):
        run = waiting_confirmation(shared, alice, name="Team offsite")
    [row] = Notification.objects.filter(user=bob)
    links = links_of(row)
    # The plan changes while the run still waits on the same item.
    services.subtask_add(
        plan_id=current_plan(shared).pk, actor=Actor.person(alice), name="Hire a band"
    )
    assert selectors.inbox_item(user=bob, key=row.item_key) is not None
    page = client.get(links["confirm"])
    assert page.status_code == 409 and b'data-outcome="changed"' in page.content
    assert f"/sessions/{shared.pk}/".encode() in page.content
    assert b"Hire a band" not in page.content
    response = client.post(links["confirm"])
    assert response.status_code == 409 and b'data-outcome="changed"' in response.content
    assert AgentRun.objects.get(pk=run.pk).status == "waiting_for_user"
    assert not Decision.objects.exists()


def test_a_decision_in_the_browser_spends_everyone_s_links(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "approval")
    subscribe(bob, "approval")
    with capture(execute=True):
        call = waiting_approval(shared, alice)
    bob_links = links_of(Notification.objects.get(user=bob))
    links_of(Notification.objects.get(user=alice))
    assert ActionLink.objects.filter(used_at__isnull=True).count() == 4
    client_for(alice).post(
        f"/api/sessions/{shared.pk}/tool-calls/{call.tool_call_id}/decision/",
        {"decision": "deny"},
        content_type="application/json",
    )
    # Every link of the item is spent, bob's too, in the decision's own transaction.
    assert not ActionLink.objects.filter(used_at__isnull=True).exists()
    assert set(ActionLink.objects.values_list("outcome", flat=True)) == {"already_decided"}
    response = client.post(bob_links["approve"])
    assert response.status_code == 409 and b'data-outcome="already_decided"' in response.content
    assert ToolCall.objects.get(pk=call.pk).status == "denied"


def test_a_link_decision_spends_the_other_person_s_links(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "confirmation")
    subscribe(bob, "confirmation")
    with capture(execute=True):
        waiting_confirmation(shared, alice)
    alice_links = links_of(Notification.objects.get(user=alice))
    bob_links = links_of(Notification.objects.get(user=bob))
    assert client.post(bob_links["confirm"]).status_code == 200
    assert ActionLink.objects.get(token_hash=_hash(alice_links["confirm"])).used_at is not None
    assert client.post(alice_links["confirm"]).status_code == 409
    assert Decision.objects.filter(decision="confirm").count() == 1


def _hash(path: str) -> str:
    import hashlib

    return hashlib.sha256(token_of(path).encode()).hexdigest()


# --- what the page shows --------------------------------------------------------------------


def test_the_confirmation_page_lists_the_subtasks_in_order_as_text(
    alice: Any, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "confirmation")
    session = services.session_create(owner=alice, title="Kyoto")
    with capture(execute=True):
        run = running(session, alice, "Plan a trip")
        services.plan_create(
            session_id=session.pk,
            actor=Actor.agent(run),
            name="Trip",
            subtasks=[{"name": "Book flights"}, {"name": XSS}, {"name": "Pack"}],
        )
        services.run_finish(run_id=run.pk, status="waiting_for_user")
    links = links_of(Notification.objects.get(user=alice))
    page = client.get(links["confirm"])
    body = page.content.decode()
    assert page.status_code == 200
    assert XSS not in body and "&lt;script&gt;alert(" in body
    first, second, third = (body.index(n) for n in ("Book flights", "&lt;script&gt;", "Pack<"))
    assert first < second < third
    assert page["Referrer-Policy"] == "no-referrer"
    assert "no-store" in page["Cache-Control"]


def test_the_pages_own_button_decides_although_the_browser_sends_origin_null(
    alice: Any, handed: Any, capture: Any
) -> None:
    """Under `no-referrer` a browser posts the page's form with `Origin: null` and, from a
    mail client, without the site's cookies: the token is the credential, so that decides."""
    subscribe(alice, "confirmation")
    session = services.session_create(owner=alice, title="Kyoto")
    with capture(execute=True):
        run = waiting_confirmation(session, alice)
    links = links_of(Notification.objects.get(user=alice))
    browser = Client(enforce_csrf_checks=True)
    decided = browser.post(links["confirm"], HTTP_ORIGIN="null")
    assert decided.status_code == 200 and b'data-outcome="decided"' in decided.content
    assert AgentRun.objects.get(pk=run.pk).status == "queued"
    assert browser.post(links["confirm"], HTTP_ORIGIN="null").status_code == 409


# --- people, subtasks, expiry -----------------------------------------------------------------


def test_an_inactive_person_s_link_page_is_refused(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(bob, "approval")
    with capture(execute=True):
        call = waiting_approval(shared, alice)
    links = links_of(Notification.objects.get(user=bob))
    bob.is_active = False
    bob.save()
    page = client.get(links["approve"])
    assert page.status_code == 404 and b'data-outcome="refused"' in page.content
    assert b"write_note" not in page.content
    assert ToolCall.objects.get(pk=call.pk).status == "pending"


def test_an_approval_item_names_the_subtask_in_progress(alice: Any) -> None:
    session = services.session_create(owner=alice, title="Notes")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=Actor.person(alice),
        name="Notes",
        subtasks=[{"name": "Write it down"}, {"name": "Share it"}],
    )
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    services.subtask_set_state(
        plan_id=plan.pk, actor=Actor.person(alice), subtask_id=first.pk, state="in_progress"
    )
    call = waiting_approval(session, alice)
    item = selectors.inbox_item(user=alice, key=selectors.tool_call_key(call.pk))
    assert item is not None
    assert item["subtask"] == {"id": first.pk, "name": "Write it down"}


@pytest.mark.parametrize("kind", ["approval", "confirmation"])
def test_a_link_closed_by_the_sweep_says_expired(
    alice: Any, handed: Any, client: Client, capture: Any, kind: str
) -> None:
    subscribe(alice, kind)
    session = services.session_create(owner=alice, title="Late")
    with capture(execute=True):
        if kind == "approval":
            waiting_approval(session, alice)
        else:
            waiting_confirmation(session, alice)
    links = links_of(Notification.objects.get(user=alice))
    decision = "approve" if kind == "approval" else "confirm"
    ActionLink.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    assert tasks.expire_action_links.run() >= 1
    page = client.get(links[decision])
    assert page.status_code == 410 and b'data-outcome="expired"' in page.content
    posted = client.post(links[decision])
    assert posted.status_code == 410 and b'data-outcome="expired"' in posted.content


def test_the_sweep_leaves_another_person_s_live_confirmation_link(
    alice: Any, bob: Any, shared: ChatSession, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "confirmation")
    subscribe(bob, "confirmation")
    with capture(execute=True):
        run = waiting_confirmation(shared, alice)
    links_of(Notification.objects.get(user=alice))
    bob_links = links_of(Notification.objects.get(user=bob))
    ActionLink.objects.filter(user=alice).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert tasks.expire_action_links.run() == 1
    assert client.post(bob_links["confirm"]).status_code == 200
    assert AgentRun.objects.get(pk=run.pk).status == "queued"


# --- the exact wait, checked under the session's lock ---------------------------------------


def test_a_go_ahead_for_a_wait_checks_the_wait_and_the_revision_under_the_lock(
    alice: Any,
) -> None:
    from planboard.services._inbox import WaitRef

    session = services.session_create(owner=alice, title="Kyoto")
    run = waiting_confirmation(session, alice)
    plan = current_plan(session)
    key = selectors.run_key(run.pk, run.waits)

    def confirm(wait: WaitRef) -> None:
        services.message_post(
            session_id=session.pk, author=alice, content="Go", intent="confirm", wait=wait
        )

    with pytest.raises(PlanError) as older:
        confirm(WaitRef(key=selectors.run_key(run.pk, run.waits - 1), plan_id=plan.pk))
    assert older.value.code == "already_decided"
    with pytest.raises(PlanError) as changed:
        confirm(WaitRef(key=key, plan_id=plan.pk, plan_version=plan.version - 1))
    assert changed.value.code == "plan_changed"
    assert AgentRun.objects.get(pk=run.pk).status == "waiting_for_user"
    confirm(WaitRef(key=key, plan_id=plan.pk, plan_version=plan.version))
    assert AgentRun.objects.get(pk=run.pk).status == "queued"


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("run:5:2", ("run", 5)),
        ("tool_call:7", ("tool_call", 7)),
        ("elicitation:3", ("elicitation", 3)),
        ("run:5", None),
        ("run:5:x", None),
        ("run::1", None),
        ("tool_call:7:1", None),
        ("plan:1", None),
    ],
)
def test_item_keys(key: str, parsed: tuple[str, int] | None) -> None:
    assert selectors.parse_item_key(key) == parsed


def test_a_confirmation_link_for_a_plan_started_meanwhile_says_it_changed(
    alice: Any, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "confirmation")
    session = services.session_create(owner=alice, title="Kyoto")
    with capture(execute=True):
        run = waiting_confirmation(session, alice)
    links = links_of(Notification.objects.get(user=alice))
    plan = current_plan(session)
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    # Alice starts the work herself: the run now waits on a question, not a go-ahead.
    services.subtask_set_state(
        plan_id=plan.pk, actor=Actor.person(alice), subtask_id=first.pk, state="in_progress"
    )
    response = client.post(links["confirm"])
    assert response.status_code == 409 and b'data-outcome="changed"' in response.content
    assert AgentRun.objects.get(pk=run.pk).status == "waiting_for_user"
