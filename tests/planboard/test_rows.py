"""The hot path's row helpers (planboard.selectors.rows, planboard.services._rows) load and
store exactly what the ORM does, on SQLite and PostgreSQL, and the PostgreSQL lock takes the
session before the plan."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.models import Model
from django.db.models.signals import post_save, pre_save

from planboard import selectors
from planboard.models import AgentRun, ChatSession, Message, Plan, PlanEvent, SubTask
from planboard.selectors import rows
from planboard.services import _rows
from planboard.snapshots import build_plan_snapshot


def fields_of(obj: Model) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.fixture
def costly_plan(plan: Plan) -> Plan:
    """Values that need converting on the way back: decimals, datetimes, unicode, NULLs."""
    Plan.objects.filter(pk=plan.pk).update(
        cost_usd=Decimal("1.234567"), tokens=42, finished_at=dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    )
    SubTask.objects.filter(plan=plan, position=0).update(
        cost_usd=Decimal("0.000001"), name="京都 — <b>&</b>", outcome="x\ny"
    )
    return plan


def test_loaded_rows_equal_the_orms(costly_plan: Plan, chat_session: ChatSession) -> None:
    plan = rows.plan(costly_plan.pk)
    assert plan is not None
    assert fields_of(plan) == fields_of(Plan.objects.get(pk=costly_plan.pk))
    assert plan.owner.get_username() == costly_plan.owner.get_username()
    loaded = rows.subtasks(costly_plan.pk)
    expected = list(SubTask.objects.filter(plan=costly_plan).order_by("position"))
    assert [fields_of(s) for s in loaded] == [fields_of(s) for s in expected]
    assert loaded[0].cost_usd == Decimal("0.000001") and loaded[0].name == "京都 — <b>&</b>"
    session = rows.session(chat_session.pk)
    assert session is not None
    assert fields_of(session) == fields_of(ChatSession.objects.get(pk=chat_session.pk))
    assert rows.plan(10**9) is None and rows.session(10**9) is None
    assert rows.subtasks(10**9) == []


def test_the_snapshot_from_column_values_equals_the_one_from_model_instances(
    costly_plan: Plan,
) -> None:
    SubTask.objects.filter(plan=costly_plan, position=1).update(
        state="done", finished_at=dt.datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    )
    # A whole second, and a time given in another zone: the same instant comes back in UTC.
    SubTask.objects.filter(plan=costly_plan, position=2).update(
        state="done",
        finished_at=dt.datetime(2026, 1, 1, 0, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=9))),
    )
    expected = build_plan_snapshot(
        Plan.objects.select_related("owner").get(pk=costly_plan.pk),
        list(SubTask.objects.filter(plan=costly_plan).order_by("position")),
    )
    assert selectors.plan_snapshot(plan_id=costly_plan.pk) == expected
    assert expected["subtasks"][1]["finished_at"] == "2026-05-06T07:08:09.123456+00:00"
    assert expected["subtasks"][2]["finished_at"] == "2025-12-31T15:00:00+00:00"


def test_update_stores_what_save_would_and_touches_auto_now(plan: Plan) -> None:
    loaded = rows.plan(plan.pk)
    assert loaded is not None
    before = Plan.objects.get(pk=plan.pk).updated_at
    loaded.name = "Renamed ✓"
    loaded.finished_at = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
    loaded.tokens = 999  # not named: must not be written
    _rows.update(loaded, ["name", "finished_at"])
    stored = Plan.objects.get(pk=plan.pk)
    assert stored.name == "Renamed ✓" and stored.finished_at == loaded.finished_at
    assert stored.tokens == 0
    assert stored.updated_at > before


def test_insert_stores_what_create_would(plan: Plan) -> None:
    payload = {"nested": [1, "二", None, {"deep": True}], "quote": "'\"; DROP TABLE x; --"}
    run = AgentRun.objects.create(session=plan.session, status=AgentRun.Status.RUNNING)
    event = PlanEvent(
        plan=plan, version=99, action="test", actor_run=run, before=None, after=payload
    )
    _rows.insert(event)
    assert event.pk is not None and not event._state.adding
    stored = PlanEvent.objects.get(pk=event.pk)
    assert stored.after == payload and stored.before is None and stored.patch == {}
    assert stored.actor_run_id == run.pk and stored.created_at == event.created_at


def test_no_plan_domain_model_listens_to_save_signals() -> None:
    """The helpers skip save signals; this fails when someone adds a receiver they'd miss."""
    for model in (ChatSession, Plan, SubTask, PlanEvent, Message):
        assert not pre_save.has_listeners(model), model
        assert not post_save.has_listeners(model), model


@pytest.mark.postgres
def test_lock_plan_holds_the_session_and_the_plan(postgres: None, plan: Plan) -> None:
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        try:
            with transaction.atomic():
                assert _rows.lock_plan(plan.pk) is not None
                held.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        for table, pk in (("planboard_chatsession", plan.session_id), ("planboard_plan", plan.pk)):
            with pytest.raises(Exception, match="could not obtain lock"):
                with transaction.atomic(), connection.cursor() as cursor:
                    cursor.execute(
                        f"SELECT 1 FROM {table} WHERE id = %s FOR NO KEY UPDATE NOWAIT",
                        [pk],
                    )
    finally:
        release.set()
        thread.join()
