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
from django.test.utils import CaptureQueriesContext

from planboard import prepared, selectors, services
from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SessionToolset,
    SubTask,
    ToolCall,
    Toolset,
    ToolsetTool,
)
from planboard.selectors import rows
from planboard.services import Actor, _rows
from planboard.snapshots import build_plan_snapshot, serialize_event


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
    prepared.update(loaded, ["name", "finished_at"])
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
    prepared.insert(event)
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


# --- what an agent step reads: each equals what the ORM gives --------------------------------


def test_a_runs_row_equals_the_orms(chat_session: ChatSession, user: Any) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    services.run_cancel(session_id=chat_session.pk)
    loaded = rows.agent_run(run.pk)
    assert loaded is not None
    assert fields_of(loaded) == fields_of(AgentRun.objects.get(pk=run.pk))
    assert loaded.cancel_requested
    assert rows.agent_run(10**9) is None


def test_the_transcript_reads_equal_the_orms(chat_session: ChatSession, user: Any) -> None:
    services.message_post(session_id=chat_session.pk, author=user, content="京都\x01 <b>hi</b>")
    services.message_record_agent(
        session_id=chat_session.pk,
        run_id=None,
        role=Message.Role.ASSISTANT,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}],
    )
    expected = list(Message.objects.filter(session=chat_session).order_by("id"))
    loaded = rows.messages_from(chat_session.pk, expected[1].pk)
    assert [fields_of(m) for m in loaded] == [fields_of(m) for m in expected[1:]]
    assert loaded[0].tool_calls[0]["id"] == "c1"  # JSON comes back decoded
    assert rows.messages_from(10**9, 0) == []


def test_events_since_serialise_as_the_orms_do(
    plan: Plan, chat_session: ChatSession, user: Any
) -> None:
    services.subtask_update(
        plan_id=plan.pk,
        subtask_id=SubTask.objects.filter(plan=plan).order_by("position")[0].pk,
        actor=Actor.person(user),
        name="Renamed by a person",
    )
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    services.plan_update_info(plan_id=plan.pk, actor=Actor.agent(run), name="Renamed by the agent")
    queryset = PlanEvent.objects.filter(plan=plan, version__gt=1).order_by("version")
    expected = [
        serialize_event(e) for e in queryset.select_related("plan", "actor_user", "actor_run")
    ]
    assert {e["actor"]["kind"] for e in expected} >= {"user", "agent"}
    with CaptureQueriesContext(connection) as queries:
        found = [serialize_event(e) for e in rows.plan_events_since(plan.pk, 1, 100)]
    assert found == expected
    assert len(queries.captured_queries) == 1  # nothing is loaded on the side
    assert [
        e["version"] for e in selectors.plan_events_since(plan_id=plan.pk, version=1, limit=1)
    ] == [2]


def test_a_sessions_tools_and_flagged_calls_equal_the_orms(chat_session: ChatSession) -> None:
    shown = Toolset.objects.create(name="files", kind="stdio", command="x")
    off = Toolset.objects.create(name="off", kind="stdio", command="x", enabled=False)
    other = Toolset.objects.create(name="other", kind="stdio", command="x")
    for toolset in (shown, off, other):
        ToolsetTool.objects.create(toolset=toolset, name="read", input_schema={"type": "object"})
    ToolsetTool.objects.create(toolset=shown, name="delete", policy=ToolsetTool.Policy.NEVER)
    ToolsetTool.objects.create(toolset=shown, name="gone", available=False)
    ToolsetTool.objects.create(toolset=shown, name="append", policy=ToolsetTool.Policy.AUTO)
    SessionToolset.objects.create(session=chat_session, toolset=shown)
    SessionToolset.objects.create(session=chat_session, toolset=off)
    expected = list(
        ToolsetTool.objects.filter(
            toolset__sessions__session_id=chat_session.pk, toolset__enabled=True, available=True
        )
        .exclude(policy=ToolsetTool.Policy.NEVER)
        .select_related("toolset")
        .order_by("toolset__name", "name")
    )
    with CaptureQueriesContext(connection) as queries:
        loaded = rows.session_tools(chat_session.pk)
        names = [(t.toolset.name, t.name) for t in loaded]
    # The session's built-in workspace tools come too; never-offered, gone, disabled don't.
    assert [n for n in names if n[0] != "workspace"] == [("files", "append"), ("files", "read")]
    assert len(queries.captured_queries) == 1
    assert [fields_of(t) for t in loaded] == [fields_of(t) for t in expected]
    assert [fields_of(t.toolset) for t in loaded] == [fields_of(t.toolset) for t in expected]

    def call(number: int, **fields: Any) -> ToolCall:
        return ToolCall.objects.create(
            session=chat_session,
            tool_call_id=f"c{number}",
            tool_name="files__read",
            toolset=shown,
            tool="read",
            **fields,
        )

    done = call(1, status=ToolCall.Status.SUCCEEDED)
    allowed = call(2, status=ToolCall.Status.SUCCEEDED, always_allow=True)
    waiting = call(3)
    # Both in one statement, equal to the two reads.
    with CaptureQueriesContext(connection) as queries:
        tools, calls = rows.session_tools_and_flagged_calls(chat_session.pk)
        names = [(t.toolset.name, t.name) for t in tools]
    assert len(queries.captured_queries) == 1
    assert names == [(t.toolset.name, t.name) for t in loaded]
    assert [fields_of(t) for t in tools] == [fields_of(t) for t in loaded]
    assert [fields_of(t.toolset) for t in tools] == [fields_of(t.toolset) for t in loaded]
    assert [c.pk for c in calls] == [allowed.pk, waiting.pk]
    flagged = ToolCall.objects.filter(session=chat_session).exclude(pk=done.pk)
    assert [fields_of(c) for c in calls] == [fields_of(c) for c in flagged.order_by("id")]
    assert rows.session_tools_and_flagged_calls(10**9) == ([], [])


def test_the_transcript_after_a_known_id_holds_every_id_and_only_new_rows_whole(
    chat_session: ChatSession, user: Any
) -> None:
    for text in ("one", "two", "three"):
        services.message_post(session_id=chat_session.pk, author=user, content=text)
    expected = list(Message.objects.filter(session=chat_session).order_by("id"))
    found = rows.transcript_after(chat_session.pk, expected[0].pk)
    assert [pk for pk, _ in found] == [m.pk for m in expected]
    assert found[0][1] is None
    assert [fields_of(m) for _, m in found[1:] if m is not None] == [
        fields_of(m) for m in expected[1:]
    ]
    assert all(m is not None for _, m in found[1:])
    assert [m.pk for _, m in rows.transcript_after(chat_session.pk, 0) if m] == [
        m.pk for m in expected
    ]
    assert rows.transcript_after(10**9, 0) == []


def test_plan_usage_equals_the_orms(costly_plan: Plan) -> None:
    expected = [
        (costly_plan.pk, s.pk, s.cost_usd, s.tokens)
        for s in SubTask.objects.filter(plan=costly_plan).order_by("position")
    ]
    plan = Plan.objects.get(pk=costly_plan.pk)
    found = rows.plan_usage(costly_plan.pk)
    assert [(costly_plan.pk, r[2], r[3], r[4]) for r in found] == expected
    assert {(r[0], r[1]) for r in found} == {(plan.cost_usd, plan.tokens)}
    assert found[0][3] == Decimal("0.000001") and isinstance(found[0][0], Decimal)
    usage = selectors.plan_usage(plan_id=costly_plan.pk)
    assert usage["cost_usd"] == float(plan.cost_usd) and len(usage["subtasks"]) == len(expected)
    assert rows.plan_usage(10**9) == []


def test_a_run_with_its_session_and_plan_in_one_statement(
    plan: Plan, chat_session: ChatSession, user: Any
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    with CaptureQueriesContext(connection) as queries:
        found = rows.run_with_session_and_plan(run.pk)
        assert found is not None
        loaded_run, session, current = found
        names = (session.owner.get_username(), current.owner.get_username() if current else None)
    assert len(queries.captured_queries) == 1
    assert fields_of(loaded_run) == fields_of(AgentRun.objects.get(pk=run.pk))
    assert fields_of(session) == fields_of(ChatSession.objects.get(pk=chat_session.pk))
    assert current is not None and fields_of(current) == fields_of(Plan.objects.get(pk=plan.pk))
    assert names == (user.get_username(), user.get_username())
    assert loaded_run.session is session and session.current_plan is current
    # Without a current plan, and for no run at all.
    ChatSession.objects.filter(pk=chat_session.pk).update(current_plan=None)
    again = rows.run_with_session_and_plan(run.pk)
    assert again is not None and again[2] is None
    assert rows.run_with_session_and_plan(10**9) is None


def test_sqlite_datetimes_are_re_punctuated_and_odd_shapes_parsed() -> None:
    column = SubTask._meta.get_field("finished_at").get_col(SubTask._meta.db_table)
    convert = rows._sqlite_iso
    assert convert("2026-05-06 07:08:09.123456", column, connection) == (
        "2026-05-06T07:08:09.123456+00:00"
    )
    assert convert("2026-05-06 07:08:09", column, connection) == "2026-05-06T07:08:09+00:00"
    assert convert(None, column, connection) is None
    if connection.vendor == "sqlite":  # Django's own parser for anything else
        assert convert("2026-05-06 07:08:09.5", column, connection) == (
            "2026-05-06T07:08:09.500000+00:00"
        )
