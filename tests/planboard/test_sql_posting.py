"""planboard/sql.py's statements of a posted message (`services.message_post`): each reads or
stores what the ORM does, on SQLite and PostgreSQL; ids out of range are "not found"; the
admission lock holds the owner's row."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import transaction

from planboard import services, sql
from planboard.models import AgentRun, ChatSession
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


@pytest.mark.parametrize("wrong", OUT_OF_RANGE)
def test_ids_out_of_range_are_not_found(wrong: int, chat_session: ChatSession) -> None:
    assert sql.session_owner_id(wrong) is None and sql.latest_run(wrong) is None
    assert sql.active_runs_of(wrong) == []
    with transaction.atomic():
        sql.lock_user(wrong)  # nothing to lock


@pytest.mark.postgres
def test_the_admission_lock_holds_the_owners_row(postgres: None, user: Any) -> None:
    with held_elsewhere(lambda: sql.lock_user(user.pk) or True) as probe:
        assert is_locked(probe, "auth_user", user.pk)
