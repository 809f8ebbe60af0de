"""planboard/sql.py: each statement gives (reads) or stores (writes) what the ORM does, on SQLite
and PostgreSQL; ids out of range are "not found"; the PostgreSQL lock takes the session before
the plan; and every column list names every field of its model."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, F, Model, OuterRef, Q, QuerySet

from planboard import selectors, services, sql
from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    Team,
    TeamMembership,
    ToolCall,
    Toolset,
    ToolsetCredential,
    ToolsetTool,
)
from planboard.services import Actor
from tests.support import db

OUT_OF_RANGE = [0, -1, 2**63, -(2**63) - 1, 10**30, True]


def fields_of(obj: Model) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.fixture
def costly_plan(plan: Plan) -> Plan:
    """Values the database hands back converted: decimals, datetimes, unicode, NULLs."""
    Plan.objects.filter(pk=plan.pk).update(
        cost_usd=Decimal("1.234567"), tokens=42, finished_at=dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    )
    SubTask.objects.filter(plan=plan, position=0).update(
        cost_usd=Decimal("0.000001"), name="京都 — <b>&</b>", outcome="x\ny", agent="scout"
    )
    SubTask.objects.filter(plan=plan, position=1).update(
        state="done", finished_at=dt.datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    )
    # A whole second given in another zone; a fraction PostgreSQL writes shortened (".5").
    SubTask.objects.filter(plan=plan, position=2).update(
        state="done",
        created_at=dt.datetime(2026, 2, 3, 4, 5, 6, 500000, tzinfo=dt.UTC),
        finished_at=dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=9))),
    )
    ChatSession.objects.filter(pk=plan.session_id).update(
        budget_usd=Decimal("2.5"), spent_usd=Decimal("0.000123"), max_subtasks=7
    )
    return plan


@pytest.mark.parametrize(
    ("model", "columns"),
    [
        (ChatSession, sql.SESSION_COLUMNS),
        (Plan, sql.PLAN_COLUMNS),
        (SubTask, sql.SUBTASK_COLUMNS),
        (AgentRun, sql.RUN_COLUMNS),
        (ToolsetTool, sql.TOOL_COLUMNS),
        (User, sql.USER_COLUMNS),
    ],
)
def test_every_column_list_names_every_field(model: type[Model], columns: str) -> None:
    """A field added to the model and not here would load lazily, one query per instance."""
    listed = [column.strip().split(".")[-1] for column in columns.split(",")]
    if model is ToolsetTool:  # what a step uses of an offered tool (the rest loads on use)
        assert set(listed) < {f.column for f in model._meta.concrete_fields}
        return
    assert listed == [f.column for f in model._meta.concrete_fields]


def test_the_session_with_its_plan_equals_the_orms(costly_plan: Plan, user: Any) -> None:
    with db.statements() as run:
        found = sql.session_with_plan(costly_plan.session_id)
        assert found is not None
        session, current, flagged, run_found, messages, values = found
        names = (session.owner.get_username(), current.owner.get_username() if current else None)
        assert session.current_plan is current
    assert len(run) == 1
    assert values == selectors.plans._subtask_values(costly_plan.pk) and len(values) == 3
    assert fields_of(session) == fields_of(ChatSession.objects.get(pk=costly_plan.session_id))
    assert current is not None and fields_of(current) == fields_of(
        Plan.objects.get(pk=costly_plan.pk)
    )
    assert session.budget_usd == Decimal("2.5") and current.cost_usd == Decimal("1.234567")
    assert names == (user.get_username(), user.get_username())
    assert not flagged and run_found is None and messages is None  # no run asked for
    ChatSession.objects.filter(pk=costly_plan.session_id).update(current_plan=None)
    again = sql.session_with_plan(costly_plan.session_id)
    assert again is not None and again[1] is None and again[5] == []


def test_an_agent_steps_run_comes_with_its_session(chat_session: ChatSession) -> None:
    """Each agent step reads its run in the session's statement: as the ORM has it, and only
    when it is a run of that session."""
    run = AgentRun.objects.create(session=chat_session, model="m", status="running",
        cost_usd=Decimal("0.000321"), lease_owner="w1",
        lease_expires_at=dt.datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=dt.UTC))  # fmt: skip
    with db.statements() as statements:
        found = sql.session_with_plan(chat_session.pk, run.pk)
    assert len(statements) == 1
    assert found is not None and found[3] is not None
    assert fields_of(found[3]) == fields_of(AgentRun.objects.get(pk=run.pk))
    assert found[4] == 0  # the session's messages, counted with the run
    for number in range(3):
        Message.objects.create(session=chat_session, role="user", content=f"m{number}")
    Message.objects.create(session=services.session_create(owner=chat_session.owner), role="user")
    found = sql.session_with_plan(chat_session.pk, run.pk)
    assert (
        found is not None and found[4] == 3 == Message.objects.filter(session=chat_session).count()
    )
    other = services.session_create(owner=chat_session.owner, need_user_confirm=False)
    elsewhere = sql.session_with_plan(other.pk, run.pk)
    assert elsewhere is not None and elsewhere[3] is None and elsewhere[4] is None
    for wrong in (None, 10**9, 2**63, True):
        found = sql.session_with_plan(chat_session.pk, wrong)
        assert found is not None and found[3] is None and found[4] is None


def test_the_session_read_brings_the_subtasks_in_plan_mode_only(plan: Plan, actor: Actor) -> None:
    """The snapshot a tool call and a step resolve indices against and show in the hint: the
    same as the snapshot selector's, from the same statement as the session."""

    with db.statements() as run:
        found = selectors.session_with_plan(session_id=plan.session_id)
    assert len(run) == 1
    assert found is not None and found.snapshot == selectors.plan_snapshot(plan_id=plan.pk)
    # The session's row comes once: each subtask's row has NULLs in its place (its times are
    # not parsed again per subtask).
    rows = sql._rows(sql.SESSION_WITH_PLAN, [None, plan.session_id])
    assert len(rows) == 1 + len(found.snapshot["subtasks"]) > 2
    assert rows[0][0] == plan.session_id
    assert all(row[: sql.SP_WIDTH] == (None,) * sql.SP_WIDTH for row in rows[1:])
    first = found.snapshot["subtasks"][0]["id"]
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=first)
    ChatSession.objects.filter(pk=plan.session_id).update(plan_mode=False)
    off = selectors.session_with_plan(session_id=plan.session_id)
    assert off is not None and off.plan is not None and off.snapshot is None
    ChatSession.objects.filter(pk=plan.session_id).update(plan_mode=True)
    on = selectors.session_with_plan(session_id=plan.session_id)
    assert on is not None and on.snapshot is not None and len(on.snapshot["subtasks"]) == 2
    SubTask.objects.filter(plan=plan).delete()
    empty = selectors.session_with_plan(session_id=plan.session_id)
    assert empty is not None and empty.snapshot is not None and empty.snapshot["subtasks"] == []


def test_the_session_read_says_whether_a_tool_call_is_flagged(chat_session: ChatSession) -> None:
    """Always allowed, or waiting for a person: only then does a step read the calls."""

    def flagged() -> bool:
        found = sql.session_with_plan(chat_session.pk)
        assert found is not None
        return found[2]

    def call(number: int, **fields: Any) -> ToolCall:
        return ToolCall.objects.create(
            session=chat_session, tool_call_id=f"c{number}", tool_name="t__x", tool="x", **fields
        )

    done = call(1, status=ToolCall.Status.SUCCEEDED)
    assert not flagged()
    waiting = call(2)  # pending
    assert flagged()
    waiting.delete()
    ToolCall.objects.filter(pk=done.pk).update(always_allow=True)
    assert flagged()


def test_the_plan_lock_reads_what_the_orm_does(costly_plan: Plan) -> None:
    expected = fields_of(Plan.objects.get(pk=costly_plan.pk))
    with transaction.atomic():
        locked = sql.lock_plan(costly_plan.pk)
    assert locked is not None and fields_of(locked) == expected
    with db.statements() as run:
        assert locked.owner.get_username() == "alice"
    assert len(run) == 0  # the owner came with the plan


def test_the_lock_with_the_subtasks_equals_the_orms(costly_plan: Plan) -> None:
    expected = list(SubTask.objects.filter(plan=costly_plan).order_by("position"))
    with transaction.atomic(), db.statements() as run:
        found = sql.lock_plan_and_subtasks(costly_plan.pk)
    assert found is not None
    locked, subtasks = found
    assert len(run) == 2  # the lock, then the subtasks (a snapshot taken after the wait)
    assert fields_of(locked) == fields_of(Plan.objects.get(pk=costly_plan.pk))
    assert [fields_of(s) for s in subtasks] == [fields_of(s) for s in expected]
    SubTask.objects.filter(plan=costly_plan).delete()
    with transaction.atomic():
        empty = sql.lock_plan_and_subtasks(costly_plan.pk)
    assert empty is not None and empty[1] == [] and empty[0].pk == costly_plan.pk


def test_a_plan_without_a_session_is_read_and_locked(costly_plan: Plan) -> None:
    Plan.objects.filter(pk=costly_plan.pk).update(session=None)
    with transaction.atomic():
        locked = sql.lock_plan(costly_plan.pk)
    assert locked is not None and locked.session_id is None


def _subtasks(plan_id: int) -> list[SubTask]:
    with transaction.atomic():
        found = sql.lock_plan_and_subtasks(plan_id)
    return found[1] if found else []


def test_the_subtasks_under_the_lock_equal_the_orms(costly_plan: Plan) -> None:
    found = _subtasks(costly_plan.pk)
    expected = list(SubTask.objects.filter(plan=costly_plan).order_by("position"))
    assert [fields_of(s) for s in found] == [fields_of(s) for s in expected]
    assert found[0].name == "京都 — <b>&</b>" and found[0].cost_usd == Decimal("0.000001")
    assert found[1].finished_at == dt.datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)


@pytest.mark.parametrize("wrong", OUT_OF_RANGE)
def test_ids_out_of_range_are_not_found(wrong: int, chat_session: ChatSession) -> None:
    """The driver would refuse them (SQLite: OverflowError); they simply exist nowhere."""
    assert sql.session_with_plan(wrong) is None
    assert _subtasks(wrong) == []
    with transaction.atomic():
        assert sql.lock_plan(wrong) is None
        assert sql.lock_plan_and_subtasks(wrong) is None
        assert sql.lock_session(wrong) is None
    cost = Decimal("0.1")
    assert sql.run_count_step(wrong, prompt_tokens=1, completion_tokens=1, cost_usd=cost) is None


def test_unknown_ids_are_not_found(chat_session: ChatSession) -> None:
    assert sql.session_with_plan(10**9) is None
    assert _subtasks(10**9) == []
    with transaction.atomic():
        assert sql.lock_session(10**9) is None and sql.lock_plan(10**9) is None


def test_the_session_lock_reads_what_the_orm_does(costly_plan: Plan) -> None:
    with transaction.atomic():
        locked = sql.lock_session(costly_plan.session_id)
    expected = ChatSession.objects.select_related("owner").get(pk=costly_plan.session_id)
    assert locked is not None and fields_of(locked) == fields_of(expected)
    assert (locked.owner.pk, locked.owner.username) == (expected.owner.pk, expected.owner.username)


def test_the_plan_update_stores_what_save_would(costly_plan: Plan) -> None:
    """The fields a change sets, `updated_at` touched; never the usage counters, which steps
    add to without the plan's lock."""
    with transaction.atomic():
        by_sql = sql.lock_plan(costly_plan.pk)
    by_orm = Plan.objects.get(pk=costly_plan.pk)
    assert by_sql is not None
    before = by_orm.updated_at
    Plan.objects.filter(pk=costly_plan.pk).update(tokens=F("tokens") + 5)  # a step meanwhile
    for plan in (by_sql, by_orm):
        plan.name, plan.outcome, plan.state = "Renamed ✓", "It's done", "done"
        plan.version += 1
        plan.finished_at = dt.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=dt.UTC)
    sql.plan_update(by_sql)
    stored_by_sql = fields_of(Plan.objects.get(pk=costly_plan.pk))
    by_orm.save(
        update_fields=[
            "name", "description", "expected_outcome", "version", "state", "outcome",
            "finished_at", "session", "updated_at",
        ]
    )  # fmt: skip
    stored_by_orm = fields_of(Plan.objects.get(pk=costly_plan.pk))
    assert stored_by_sql["updated_at"] > before
    assert stored_by_sql.pop("updated_at") <= stored_by_orm.pop("updated_at")
    assert stored_by_sql == stored_by_orm
    assert stored_by_sql["tokens"] == 47  # the step's tokens survived both


def test_the_subtask_update_stores_what_save_would(costly_plan: Plan) -> None:
    first = _subtasks(costly_plan.pk)[0]
    SubTask.objects.filter(pk=first.pk).update(tokens=F("tokens") + 3)  # a step meanwhile
    first.name, first.agent, first.state = "Renamed", "", "done"
    first.finished_at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=9)))
    first.outcome = "Booked 'both' ways"
    first.position = 99  # not the subtask update's to write
    sql.subtask_update(first)
    stored = SubTask.objects.get(pk=first.pk)
    assert (stored.name, stored.agent, stored.state, stored.outcome) == (
        "Renamed", "", "done", "Booked 'both' ways",
    )  # fmt: skip
    assert stored.finished_at == dt.datetime(2025, 12, 31, 15, tzinfo=dt.UTC)
    assert (stored.position, stored.tokens) == (0, 3)


def test_a_message_insert_stores_what_create_would(chat_session: ChatSession, user: Any) -> None:
    calls = [{"id": "c1", "function": {"name": "x", "arguments": '{"q": "二"}'}, "n": None}]
    run = AgentRun.objects.create(session=chat_session)
    fields = {
        "session_id": chat_session.pk,
        "run_id": run.pk,
        "author_id": user.pk,
        "role": Message.Role.ASSISTANT,
        "content": "'\"; DROP TABLE x; -- 京都",
        "tool_calls": calls,
        "answer_id": "r1s1",
    }
    inserted = Message(**fields)
    assert sql.message_insert(inserted)
    created = Message.objects.create(**fields)
    assert inserted.pk is not None and not inserted._state.adding
    stored, expected = fields_of(Message.objects.get(pk=inserted.pk)), fields_of(created)
    assert stored.pop("id") != expected.pop("id")
    assert stored.pop("created_at") <= expected.pop("created_at")
    assert stored == expected and stored["tool_calls"] == calls
    no_calls = Message(session_id=chat_session.pk, role=Message.Role.USER, content="hi")
    assert sql.message_insert(no_calls)
    assert Message.objects.get(pk=no_calls.pk).tool_calls is None


def test_a_second_result_for_a_tool_call_is_not_stored(chat_session: ChatSession) -> None:
    """No savepoint: the caller's transaction goes on, and nothing of the second is kept."""

    def result(content: str) -> Message:
        return Message(
            session_id=chat_session.pk, role=Message.Role.TOOL, tool_call_id="c1", content=content
        )

    with transaction.atomic(), db.statements() as run:
        assert sql.message_insert(result("first"))
        second = result("second")
        assert not sql.message_insert(second)
        assert second.pk is None
        assert Message.objects.filter(tool_call_id="c1").count() == 1  # still usable
    assert not any("SAVEPOINT" in statement for statement in run)
    assert Message.objects.get(tool_call_id="c1").content == "first"


def test_counting_a_step_adds_what_f_expressions_would(
    chat_session: ChatSession, user: Any
) -> None:
    other = services.session_create(owner=user)  # one active run per session
    by_sql = AgentRun.objects.create(session=other, lease_owner="w1")
    by_orm = AgentRun.objects.create(session=chat_session, lease_owner="w1")
    for _ in range(2):
        flags = sql.run_count_step(
            by_sql.pk, prompt_tokens=10, completion_tokens=3, cost_usd=Decimal("0.000125")
        )
        AgentRun.objects.filter(pk=by_orm.pk).update(
            step_count=F("step_count") + 1,
            prompt_tokens=F("prompt_tokens") + 10,
            completion_tokens=F("completion_tokens") + 3,
            cost_usd=F("cost_usd") + Decimal("0.000125"),
        )
    assert flags == (False, "w1", (None,) * 6)  # spent on no session or plan
    counted, expected = AgentRun.objects.get(pk=by_sql.pk), AgentRun.objects.get(pk=by_orm.pk)
    keys = ("step_count", "prompt_tokens", "completion_tokens", "cost_usd")
    assert [getattr(counted, k) for k in keys] == [getattr(expected, k) for k in keys]
    assert counted.cost_usd == Decimal("0.00025")
    services.run_cancel(session_id=chat_session.pk)
    flags = sql.run_count_step(by_orm.pk, prompt_tokens=0, completion_tokens=0, cost_usd=Decimal(0))
    assert flags is not None and flags[:2] == (True, "")  # the flags as the update left them
    assert (
        sql.run_count_step(10**9, prompt_tokens=1, completion_tokens=1, cost_usd=Decimal(1)) is None
    )


def test_counting_a_step_adds_its_usage_where_it_was_spent_and_reads_the_new_totals(
    costly_plan: Plan, user: Any, actor: Any
) -> None:
    """The usage goes to the session, the plan and the subtask it was spent on (as the `F()`
    updates it replaced added it; a subtask only of that plan), and the plan's and subtask's
    new totals, and the session's, come back: what the `plan.usage` event says, without a
    read after the commit."""
    first, second = SubTask.objects.filter(plan=costly_plan).order_by("position")[:2]
    session = ChatSession.objects.get(pk=costly_plan.session_id)
    run = AgentRun.objects.create(session=session)
    cost, used = Decimal("0.000125"), 13

    def count(**where: int | None) -> tuple[Any, ...]:
        with transaction.atomic():
            counted = sql.run_count_step(
                run.pk, prompt_tokens=10, completion_tokens=3, cost_usd=cost, **where
            )
        assert counted is not None
        return counted[2]

    totals = count(session_id=session.pk, plan_id=costly_plan.pk, subtask_id=first.pk)
    after = ChatSession.objects.get(pk=session.pk)
    assert (after.spent_usd, after.spent_tokens - session.spent_tokens) == (
        Decimal("0.000248"), used,
    )  # fmt: skip
    plan = Plan.objects.get(pk=costly_plan.pk)
    assert (plan.cost_usd, plan.tokens) == (Decimal("1.234692"), 42 + used)
    counted_subtask = SubTask.objects.get(pk=first.pk)
    assert (counted_subtask.cost_usd, counted_subtask.tokens) == (Decimal("0.000126"), used)
    assert SubTask.objects.get(pk=second.pk).tokens == second.tokens  # not spent there
    session_cost, session_tokens, plan_cost, plan_tokens, subtask_cost, subtask_tokens = totals
    assert (Decimal(str(session_cost)), session_tokens) == (after.spent_usd, after.spent_tokens)
    assert (Decimal(str(plan_cost)), plan_tokens) == (plan.cost_usd, plan.tokens)
    assert (Decimal(str(subtask_cost)), subtask_tokens) == (
        counted_subtask.cost_usd, counted_subtask.tokens,
    )  # fmt: skip
    # A subtask of another plan (deleted and reused ids, a stale step) is not counted.
    elsewhere = services.session_create(owner=user)
    other, _ = services.plan_create(
        session_id=elsewhere.pk, actor=actor, name="Other", subtasks=[{"name": "Elsewhere"}]
    )
    stray = SubTask.objects.get(plan=other)
    assert count(plan_id=costly_plan.pk, subtask_id=stray.pk)[4:] == (None, None)
    assert SubTask.objects.get(pk=stray.pk).tokens == 0
    assert count(plan_id=10**9, subtask_id=10**9) == (None,) * 6
    assert count() == (None,) * 6  # spent on no session, plan or subtask
    assert AgentRun.objects.get(pk=run.pk).step_count == 4


def test_a_snapshot_through_the_statements_equals_the_orms(costly_plan: Plan) -> None:
    from planboard.snapshots import build_plan_snapshot

    expected = build_plan_snapshot(
        Plan.objects.select_related("owner").get(pk=costly_plan.pk),
        list(SubTask.objects.filter(plan=costly_plan).order_by("position")),
    )
    with db.statements() as run:
        assert selectors.plan_snapshot(plan_id=costly_plan.pk) == expected
    assert len(run) == 2  # the plan, its subtasks' values
    assert expected["subtasks"][1]["finished_at"] == "2026-05-06T07:08:09.123456+00:00"
    assert expected["subtasks"][2]["created_at"] == "2026-02-03T04:05:06.500000+00:00"
    assert expected["subtasks"][2]["finished_at"] == "2025-12-31T15:00:00+00:00"


def orm_offered_tools(session_id: int, owner_id: int) -> QuerySet[ToolsetTool]:
    """The rule `sql.offered_tools` writes out, as the ORM says it."""
    teams = Toolset.teams.through.objects.filter(toolset_id=OuterRef("toolset_id"))
    return (
        ToolsetTool.objects.filter(
            ~Exists(teams) | Exists(teams.filter(team__members=owner_id)),
            Q(toolset__access=Toolset.Access.SHARED)
            | Exists(
                ToolsetCredential.objects.filter(
                    toolset_id=OuterRef("toolset_id"), user_id=owner_id
                )
            ),
            toolset__sessions__session_id=session_id,
            toolset__enabled=True,
            available=True,
            unsupported="",
        )
        .exclude(policy=ToolsetTool.Policy.NEVER)
        .select_related("toolset")
        .order_by("toolset__name", "name")
    )


def test_the_offered_tools_equal_the_orms(
    user: Any, other_user: Any, staff_admin: Any, chat_session: ChatSession
) -> None:
    """Every rule: toolsets the session enables, enabled, open to the owner's teams, shared or
    connected by the owner; tools listed, callable, not set to `never`; by toolset and name."""

    def toolset(name: str, **fields: Any) -> Toolset:
        made = services.toolset_create(user=staff_admin, name=name, kind="http",
            url="https://tools.example/mcp", **fields)  # fmt: skip
        tools = [{"name": n, "description": f"{n} <b>&</b>", "read_only": n == "b",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}
            for n in ("c", "b", "a")]  # fmt: skip
        services.toolset_refresh_tools(toolset_id=made.pk, tools=tools)
        return made

    shared, teamed, foreign = toolset("zeta"), toolset("alpha"), toolset("mid")
    personal, connected = toolset("own", access="per_person"), toolset("key", access="per_person")
    off = toolset("off")
    Toolset.objects.filter(pk=off.pk).update(enabled=False)
    mine, theirs = Team.objects.create(name="mine"), Team.objects.create(name="theirs")
    TeamMembership.objects.create(team=mine, user=user)
    TeamMembership.objects.create(team=theirs, user=other_user)
    teamed.teams.add(mine, theirs)
    foreign.teams.add(theirs)
    ToolsetCredential.objects.create(toolset=connected, user=user, headers={"K": "v"})
    ToolsetTool.objects.filter(toolset=shared, name="a").update(policy=ToolsetTool.Policy.NEVER)
    ToolsetTool.objects.filter(toolset=shared, name="b").update(available=False)
    ToolsetTool.objects.filter(toolset=teamed, name="c").update(unsupported="needs tasks")
    ToolsetTool.objects.filter(toolset=teamed, name="a").update(needs_review=True,
        policy=ToolsetTool.Policy.AUTO, reads_resources=True)  # fmt: skip
    # Enabled in both sessions as they were before some toolsets were limited or switched off.
    everything = [shared, teamed, foreign, personal, connected, off]
    theirs_session = services.session_create(owner=other_user, need_user_confirm=False)
    SessionToolset = Toolset.sessions.rel.related_model
    SessionToolset.objects.bulk_create(
        [SessionToolset(session=s, toolset=t) for s in (chat_session, theirs_session)
            for t in everything]
    )  # fmt: skip

    def shown(tool: ToolsetTool) -> tuple[Any, ...]:
        fields = ("id", "toolset_id", "name", "description", "input_schema", "read_only",
            "policy", "needs_review", "reads_resources")  # fmt: skip
        return (*(getattr(tool, f) for f in fields), tool.toolset.pk, tool.toolset.name)

    for session, owner in ((chat_session, user), (theirs_session, other_user)):
        with db.statements() as run:
            found = [shown(t) for t in sql.offered_tools(session.pk, owner.pk)]
        assert len(run) == 1  # the toolsets came with their tools
        assert found == [shown(t) for t in orm_offered_tools(session.pk, owner.pk)]
    mine_only = {t.pk for t in everything}
    names = [(t.toolset.name, t.name) for t in sql.offered_tools(chat_session.pk, user.pk)
        if t.toolset_id in mine_only]  # fmt: skip
    assert names == [("alpha", "a"), ("alpha", "b"), ("key", "a"), ("key", "b"), ("key", "c"),
        ("zeta", "c")]  # fmt: skip
    assert sql.offered_tools(chat_session.pk, other_user.pk) != []  # teams are the owner's
    assert sql.offered_tools(2**63, user.pk) == []


def test_times_read_as_text_become_what_isoformat_writes() -> None:
    from planboard.snapshots import iso

    assert iso("2026-05-06 07:08:09.5+00") == "2026-05-06T07:08:09.500000+00:00"  # PostgreSQL
    assert iso("2026-05-06 07:08:09+00") == "2026-05-06T07:08:09+00:00"
    assert iso("2026-05-06 07:08:09.123456") == "2026-05-06T07:08:09.123456+00:00"  # SQLite
    assert iso("2026-05-06 07:08:09") == "2026-05-06T07:08:09+00:00"
    assert iso(dt.datetime(2026, 5, 6, 7, 8, 9, 500000, tzinfo=dt.UTC)) == (
        "2026-05-06T07:08:09.500000+00:00"
    )
    assert iso(None) is None


@contextlib.contextmanager
def held_elsewhere(take: Callable[[], object]) -> Iterator[Any]:
    """`take()` (a lock) runs in another thread's transaction, held open while the block probes
    it through a second connection (yielded)."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        try:
            with transaction.atomic():
                assert take() is not None
                held.set()
                release.wait(10)
        finally:
            db.close_thread_connections()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        probe = db.second_connection()
        try:
            yield probe
        finally:
            probe.close()
    finally:
        release.set()
        thread.join()


def is_locked(probe: Any, table: str, pk: int) -> bool:
    try:
        with probe.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR NO KEY UPDATE NOWAIT", [pk])
    except Exception as exc:
        assert "could not obtain lock" in str(exc)
        return True
    return False


@pytest.mark.postgres
def test_the_lock_holds_the_session_then_the_plan(postgres: None, plan: Plan, actor: Actor) -> None:
    with held_elsewhere(lambda: sql.lock_plan(plan.pk)) as probe:
        assert is_locked(probe, "planboard_chatsession", plan.session_id)
        assert is_locked(probe, "planboard_plan", plan.pk)


@pytest.mark.postgres
def test_the_session_lock_holds_the_session_and_not_its_owner(
    postgres: None, chat_session: ChatSession
) -> None:
    with held_elsewhere(lambda: sql.lock_session(chat_session.pk)) as probe:
        assert not is_locked(probe, "auth_user", chat_session.owner_id)
        assert is_locked(probe, "planboard_chatsession", chat_session.pk)


def test_a_changed_plan_shows_what_the_database_holds_without_reading_it(
    chat_session: ChatSession, actor: Actor
) -> None:
    """A change returns its plan with the subtasks as it left them (`Plan.written_subtasks`):
    the snapshot built from them is the one read back, and costs no statement."""

    def same_without_reading(plan: Plan) -> None:
        assert plan.written_subtasks is not None
        with db.statements() as run:
            shown = selectors.plan_snapshot_of(plan)
        assert len(run) == 0
        assert shown == selectors.plan_snapshot(plan_id=plan.pk)

    steps = [
        {"name": f"Step {n}", "description": "京都 <b>", "expected_outcome": ""} for n in (1, 2)
    ]
    plan, _ = services.plan_create(
        session_id=chat_session.pk, actor=actor, name="P", subtasks=steps
    )
    same_without_reading(plan)
    added = services.subtask_add(plan_id=plan.pk, actor=actor, name="Between", index=1)
    same_without_reading(added.plan)
    deleted = services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=added.pk)
    assert deleted.deleted["name"] == "Between"
    same_without_reading(deleted.plan)
    services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="Done.")
    recovered, _ = services.plan_recover(session_id=chat_session.pk, actor=actor, plan_id=plan.pk)
    same_without_reading(recovered)
    fresh = selectors.plan_row(plan_id=plan.pk)
    assert fresh is not None and fresh.written_subtasks is None  # a row read: not known


def test_the_plan_read_gives_what_the_orm_does_without_a_lock(costly_plan: Plan) -> None:
    expected = fields_of(Plan.objects.get(pk=costly_plan.pk))
    found = sql.plan(costly_plan.pk)
    assert found is not None and fields_of(found) == expected
    with db.statements() as run:
        assert found.owner.get_username() == "alice"
    assert len(run) == 0  # the owner came with the plan
    assert sql.plan(costly_plan.pk + 1000) is None


@pytest.mark.parametrize("wrong", OUT_OF_RANGE)
def test_the_plan_read_finds_nothing_for_ids_out_of_range(wrong: int) -> None:
    assert sql.plan(wrong) is None


def test_an_event_insert_stores_what_save_would(plan: Plan, user: Any) -> None:
    run = AgentRun.objects.create(session_id=plan.session_id)
    fields = {
        "plan_id": plan.pk,
        "action": "subtask_updated",
        "actor_user_id": user.pk,
        "actor_run_id": run.pk,
        "subtask_id": 7,
        "before": {"name": "'\"; DROP TABLE x; -- 京都", "n": None},
        "after": [1, "二", {"x": 1.5}],
        "patch": {"plan": {"version": 3}, "upsert": [], "remove": [7], "order": None},
    }
    inserted = PlanEvent(version=100, **fields)
    sql.event_insert(inserted)
    saved = PlanEvent(version=101, **fields)
    saved.save(force_insert=True)
    assert inserted.pk is not None and not inserted._state.adding
    stored, expected = (fields_of(PlanEvent.objects.get(pk=e.pk)) for e in (inserted, saved))
    assert stored.pop("id") != expected.pop("id")
    assert (stored.pop("version"), expected.pop("version")) == (100, 101)
    assert stored.pop("created_at") <= expected.pop("created_at")
    assert stored == expected
    # No before or after: SQL NULL, as the ORM stores None (not the JSON value null).
    bare = PlanEvent(plan_id=plan.pk, version=102, action="plan_finished", patch={})
    sql.event_insert(bare)
    assert PlanEvent.objects.filter(pk=bare.pk, before__isnull=True, after__isnull=True).exists()
