"""planboard/sql.py's statements of a posted message (`services.message_post`) and of every
signed-in request's login session: each reads or stores what the ORM does, on SQLite and
PostgreSQL; ids out of range are "not found"; the admission lock holds the owner's row."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from planboard import services, sql
from planboard.login import SessionStore
from planboard.models import AgentRun, ChatSession, Message
from tests.planboard.test_sql import OUT_OF_RANGE, fields_of, held_elsewhere, is_locked


def test_the_session_owner_is_the_orms(chat_session: ChatSession, user: Any) -> None:
    assert sql.session_owner_id(chat_session.pk) == user.pk
    assert sql.session_owner_id(10**9) is None


def test_the_latest_run_equals_the_orms(chat_session: ChatSession, user: Any) -> None:
    assert sql.latest_run(chat_session.pk) is None
    _, first = services.message_post(session_id=chat_session.pk, author=user, content="one")
    services.run_finish(run_id=first.pk, status=AgentRun.Status.SUCCEEDED)
    _, second = services.message_post(session_id=chat_session.pk, author=user, content="two")
    AgentRun.objects.filter(pk=second.pk).update(error="x\ny", waits=3, cost_usd="0.000123")
    read = sql.latest_run(chat_session.pk)
    expected = AgentRun.objects.filter(session=chat_session).order_by("-id").first()
    assert read is not None and expected is not None and read.pk == second.pk
    assert fields_of(read) == fields_of(expected)


def test_the_owners_active_runs_say_which_have_a_dispatch_deadline(
    chat_session: ChatSession, user: Any
) -> None:
    other = services.session_create(owner=user, title="Other")
    _, queued = services.message_post(session_id=chat_session.pk, author=user, content="a")
    _, waiting = services.message_post(session_id=other.pk, author=user, content="b")
    AgentRun.objects.filter(pk=waiting.pk).update(lease_expires_at=None)
    done = AgentRun.objects.create(session=chat_session, status=AgentRun.Status.SUCCEEDED)
    found = sql.active_runs_of(user.pk)
    assert sorted(found) == sorted([(queued.pk, "queued", True), (waiting.pk, "queued", False)])
    assert done.pk not in {pk for pk, _, _ in found}
    assert sql.active_runs_of(10**9) == []


def test_the_title_update_stores_what_save_would(chat_session: ChatSession) -> None:
    before = ChatSession.objects.get(pk=chat_session.pk).updated_at
    when = sql.session_set_title(chat_session.pk, "京都 — <b>&</b>")
    stored = ChatSession.objects.get(pk=chat_session.pk)
    assert stored.title == "京都 — <b>&</b>" and stored.updated_at == when >= before
    assert when.tzinfo is not None and abs(when - dt.datetime.now(dt.UTC)).total_seconds() < 60


def test_a_run_insert_stores_what_create_would(chat_session: ChatSession) -> None:
    deadline = dt.datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=dt.UTC)
    fields = {"session": chat_session, "model": "京都/model", "lease_expires_at": deadline}
    inserted = AgentRun(**fields)
    sql.run_insert(inserted)
    assert inserted.pk is not None and not inserted._state.adding
    # The ORM's run may be active too: the insert's is stopped (one active run per session).
    AgentRun.objects.filter(pk=inserted.pk).update(status=AgentRun.Status.SUCCEEDED)
    created = AgentRun.objects.create(**fields)
    stored, expected = fields_of(AgentRun.objects.get(pk=inserted.pk)), fields_of(created)
    assert stored.pop("id") != expected.pop("id")
    assert stored.pop("created_at") <= expected.pop("created_at")
    assert stored.pop("status") == "succeeded" and expected.pop("status") == "queued"
    assert stored == expected and stored["lease_expires_at"] == deadline
    with pytest.raises(IntegrityError), transaction.atomic():
        sql.run_insert(AgentRun(session=chat_session))  # the constraint holds as for create


def test_a_persons_message_keeps_its_attachments(chat_session: ChatSession, user: Any) -> None:
    attached = [{"toolset_id": 3, "toolset": "Docs", "uri": "file:///京都.md", "name": None}]
    fields = {"session": chat_session, "author": user, "role": "user", "content": "see"}
    inserted = Message(**fields, attachments=attached)
    assert sql.message_insert(inserted)
    created = Message.objects.create(**fields, attachments=attached)
    stored, expected = fields_of(Message.objects.get(pk=inserted.pk)), fields_of(created)
    assert stored.pop("id") != expected.pop("id")
    assert stored.pop("created_at") <= expected.pop("created_at")
    assert stored == expected and stored["attachments"] == attached


def test_the_login_session_is_read_while_it_has_not_expired(user: Any) -> None:
    client = Client()
    client.force_login(user)
    key = client.cookies["sessionid"].value
    row = Session.objects.get(session_key=key)
    assert sql.login_session_data(key) == row.session_data
    store = SessionStore(key)
    assert int(store["_auth_user_id"]) == user.pk and store.session_key == key
    Session.objects.filter(session_key=key).update(expire_date=timezone.now())
    assert sql.login_session_data(key) is None
    expired = SessionStore(key)
    assert expired.load() == {} and expired.session_key is None  # a new key when saved
    for unknown in [None, "", "x" * 8, "x" * 400, "'; DROP TABLE django_session; --"]:
        assert sql.login_session_data(unknown) is None


def test_the_user_read_equals_the_orms(user: Any) -> None:
    User.objects.filter(pk=user.pk).update(
        first_name="京都 — <b>&</b>", last_login=dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    )
    read, expected = sql.user(user.pk), User.objects.get(pk=user.pk)
    assert read is not None and not read._state.adding and fields_of(read) == fields_of(expected)
    assert sql.user(10**9) is None


@pytest.mark.parametrize("wrong", OUT_OF_RANGE)
def test_ids_out_of_range_are_not_found(wrong: int, chat_session: ChatSession) -> None:
    assert sql.session_owner_id(wrong) is None and sql.latest_run(wrong) is None
    assert sql.user(wrong) is None
    assert sql.active_runs_of(wrong) == []
    with transaction.atomic():
        sql.lock_user(wrong)  # nothing to lock


@pytest.mark.postgres
def test_the_admission_lock_holds_the_owners_row(postgres: None, user: Any) -> None:
    with held_elsewhere(lambda: sql.lock_user(user.pk) or True) as probe:
        assert is_locked(probe, "auth_user", user.pk)
