"""The statements every plan tool call and agent step runs, written out: Django compiles a
queryset anew on every call, at more than a local round trip's cost (docs/PERFORMANCE.md); the
rest uses the ORM. The only module that touches a connection (ruff's TID251 bans the others).
tests/planboard/test_sql.py compares each with the ORM on SQLite and PostgreSQL. An id outside
1..2**63-1 is "not found", never an OverflowError. Only `planboard.services` locks and writes."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.utils import timezone

from planboard.models import AgentRun, ChatSession, Message, Plan, SubTask, Toolset, ToolsetTool

M = TypeVar("M", bound=Model)
Owned = TypeVar("Owned", ChatSession, Plan)
ID_MAX = 2**63 - 1  # the largest 64-bit primary key

SESSION_COLUMNS = """s.id, s.owner_id, s.title, s.need_user_confirm, s.max_subtasks, s.language,
s.current_plan_id, s.profile_id, s.plan_mode, s.budget_usd, s.budget_tokens, s.spent_usd,
s.spent_tokens, s.created_at, s.updated_at"""
PLAN_COLUMNS = """p.id, p.owner_id, p.session_id, p.name, p.description, p.expected_outcome,
p.state, p.outcome, p.version, p.cost_usd, p.tokens, p.created_at, p.updated_at, p.finished_at"""
SUBTASK_COLUMNS = """id, plan_id, position, name, description, expected_outcome, outcome, state,
agent, cost_usd, tokens, created_at, finished_at"""
RUN_COLUMNS = """r.id, r.session_id, r.status, r.error, r.model, r.cancel_requested, r.step_count,
r.prompt_tokens, r.completion_tokens, r.cost_usd, r.created_at, r.started_at, r.finished_at,
r.lease_owner, r.pause_reason, r.lease_expires_at"""
SESSION_WIDTH, PLAN_WIDTH, RUN_WIDTH = (
    columns.count(",") + 1 for columns in (SESSION_COLUMNS, PLAN_COLUMNS, RUN_COLUMNS)
)

# A snapshot's columns (`snapshots.SUBTASK_FIELDS`), times as text (`snapshots.iso`): instances
# and parsing the times made a 1000-subtask snapshot take 15-30 ms instead of 3.
SUBTASK_VALUE_COLUMNS = """{t}id, {t}position, {t}name, {t}description, {t}expected_outcome,
    {t}outcome, {t}state, {t}agent, CAST({t}created_at AS TEXT), CAST({t}finished_at AS TEXT)"""

# The CTE is the session's one row (with an agent step's run, and then how many messages the
# session has); its current plan's subtasks join it (in plan mode only).
SESSION_WITH_PLAN = f"""WITH sp AS (
SELECT {SESSION_COLUMNS}, so.username, {PLAN_COLUMNS}, po.username, EXISTS (SELECT 1 FROM
    planboard_toolcall c WHERE c.session_id = s.id AND (c.always_allow OR c.status = 'pending')),
    {RUN_COLUMNS}, CASE WHEN r.id IS NOT NULL THEN
    (SELECT count(*) FROM planboard_message m WHERE m.session_id = s.id) END
FROM planboard_chatsession s JOIN auth_user so ON so.id = s.owner_id
LEFT JOIN planboard_plan p ON p.id = s.current_plan_id
LEFT JOIN auth_user po ON po.id = p.owner_id
LEFT JOIN planboard_agentrun r ON r.id = %s AND r.session_id = s.id
WHERE s.id = %s)
SELECT sp.*, {SUBTASK_VALUE_COLUMNS.format(t="t.")} FROM sp
LEFT JOIN planboard_subtask t ON t.plan_id = sp.current_plan_id AND sp.plan_mode
ORDER BY t.position"""


# The session, its plan, whether a call is flagged, the run, the messages, the subtasks' values.
SessionRead = tuple[
    ChatSession, Plan | None, bool, AgentRun | None, int | None, list[tuple[Any, ...]]
]


def session_with_plan(session_id: int, run_id: int | None = None) -> SessionRead | None:
    """In one round trip, what every tool call and agent step starts with: the session and its
    current plan (owners' names attached), whether a tool call of it is always allowed or waits
    for a person, the session's run `run_id` (None: gone) with the session's message count,
    and in plan mode `subtask_values`."""
    run_key = run_id if _is_id(run_id) else None
    found = _rows(SESSION_WITH_PLAN, [run_key, session_id]) if _is_id(session_id) else []
    if not found:
        return None
    row, at = found[0], SESSION_WIDTH + 1  # where the plan starts
    session = _owned(_load(ChatSession, SESSION_COLUMNS, row[:SESSION_WIDTH]), row[SESSION_WIDTH])
    plan = None if row[at] is None else _plan_at(row, at)
    ChatSession._meta.get_field("current_plan").set_cached_value(session, plan)
    at += PLAN_WIDTH + 2  # past the plan's owner and the flag
    flagged, run_at, at = bool(row[at - 1]), at, at + RUN_WIDTH + 1
    run = None if row[run_at] is None else _load(AgentRun, RUN_COLUMNS, row[run_at : at - 1])
    return session, plan, flagged, run, row[at - 1], [r[at:] for r in found if r[at] is not None]


# `OF s`: never the owner's row. SQLite has no row locks (its writers queue): it just reads.
SESSION = f"""SELECT {SESSION_COLUMNS}, so.username
FROM planboard_chatsession s JOIN auth_user so ON so.id = s.owner_id WHERE s.id = %s"""
LOCK_SESSION = f"{SESSION} FOR NO KEY UPDATE OF s"


def lock_session(session_id: int) -> ChatSession | None:
    """Lock the session in the caller's transaction, its owner's name attached (every plan
    change's snapshot shows it); None: no session. 0.13 ms against the ORM's 0.5 ms."""
    found = _rows(_locking(LOCK_SESSION, SESSION), [session_id]) if _is_id(session_id) else []
    row = found[0] if found else None
    return None if row is None else _owned(_load(ChatSession, SESSION_COLUMNS, row[:-1]), row[-1])


# The sub-select locks the session before the statement locks the plan (`OF p`: not the user):
# the one lock order, one round trip.
PLAN = f"""SELECT {PLAN_COLUMNS}, po.username
FROM planboard_plan p JOIN auth_user po ON po.id = p.owner_id WHERE p.id = %s"""
LOCK_PLAN = f"""{PLAN} AND (p.session_id IS NULL OR EXISTS (
    SELECT 1 FROM planboard_chatsession s WHERE s.id = p.session_id FOR NO KEY UPDATE))
FOR NO KEY UPDATE OF p"""


def lock_plan(plan_id: int) -> Plan | None:
    """Lock the plan's session, then the plan (in the caller's transaction); None: no plan."""
    found = _rows(_locking(LOCK_PLAN, PLAN), [plan_id]) if _is_id(plan_id) else []
    return _plan_at(found[0], 0) if found else None


SUBTASKS = f"SELECT {SUBTASK_COLUMNS} FROM planboard_subtask WHERE plan_id = %s ORDER BY position"
SUBTASK_VALUES = f"""SELECT {SUBTASK_VALUE_COLUMNS.format(t="")}
FROM planboard_subtask WHERE plan_id = %s ORDER BY position"""


def lock_plan_and_subtasks(plan_id: int) -> tuple[Plan, list[SubTask]] | None:
    """`lock_plan`, then the plan's subtasks in board order; None: no plan. Two statements:
    one that waited for the lock still reads with the snapshot it started with (READ
    COMMITTED), which misses the subtasks the transaction it waited for added or moved."""
    plan = lock_plan(plan_id)
    found = _rows(SUBTASKS, [plan.pk]) if plan is not None else []
    return None if plan is None else (plan, [_load(SubTask, SUBTASK_COLUMNS, r) for r in found])


def subtask_values(plan_id: int) -> list[tuple[Any, ...]]:
    """The plan's subtasks in board order, as a snapshot shows them."""
    return _rows(SUBTASK_VALUES, [plan_id]) if _is_id(plan_id) else []


# What an agent step offers of the session's external tools (`selectors.session_tools`): the
# queryset took 2.5 ms to compile against 0.4 ms to run, at every step.
TOOL_COLUMNS = """t.id, t.toolset_id, t.name, t.description, t.input_schema, t.read_only,
t.policy, t.needs_review, t.reads_resources"""
OFFERED_TOOLS = f"""SELECT {TOOL_COLUMNS}, ts.name FROM planboard_toolsettool t
JOIN planboard_toolset ts ON ts.id = t.toolset_id
JOIN planboard_sessiontoolset st ON st.toolset_id = ts.id AND st.session_id = %s
WHERE ts.enabled AND t.available AND t.unsupported = '' AND t.policy <> 'never'
AND (NOT EXISTS (SELECT 1 FROM planboard_toolset_teams x WHERE x.toolset_id = ts.id)
    OR EXISTS (SELECT 1 FROM planboard_toolset_teams x JOIN planboard_teammembership m
        ON m.team_id = x.team_id WHERE x.toolset_id = ts.id AND m.user_id = %s))
AND (ts.access = 'shared' OR EXISTS (SELECT 1 FROM planboard_toolsetcredential c
    WHERE c.toolset_id = ts.id AND c.user_id = %s))
ORDER BY ts.name, t.name"""


def offered_tools(session_id: int, owner_id: int) -> list[ToolsetTool]:
    """The tools, each with its toolset (id and name only; other fields load on first use)."""
    found = _rows(OFFERED_TOOLS, [session_id, owner_id, owner_id]) if _is_id(session_id) else []
    tools = [_load(ToolsetTool, TOOL_COLUMNS, row[:-1]) for row in found]
    for tool, row in zip(tools, found, strict=True):
        toolset = Toolset.from_db(DEFAULT_DB_ALIAS, ["id", "name"], [tool.toolset_id, row[-1]])
        ToolsetTool.toolset.field.set_cached_value(tool, toolset)
    return tools


# Never the usage counters: steps add to them without the plan's lock (`run_record_step`).
PLAN_UPDATE = """UPDATE planboard_plan SET name = %s, description = %s, expected_outcome = %s,
    version = %s, state = %s, outcome = %s, finished_at = %s, session_id = %s, updated_at = %s
WHERE id = %s"""


def plan_update(plan: Plan) -> None:
    """Store what a change sets on the locked plan row (as `save()` would, `updated_at` now)."""
    plan.updated_at = timezone.now()
    _rows(PLAN_UPDATE, [plan.name, plan.description, plan.expected_outcome, plan.version,
        plan.state, plan.outcome, _time(plan.finished_at), plan.session_id,
        _time(plan.updated_at), plan.pk])  # fmt: skip


# Never its position (moved with its neighbours' by the ORM) nor its usage counters (as above).
SUBTASK_UPDATE = """UPDATE planboard_subtask SET name = %s, description = %s,
    expected_outcome = %s, outcome = %s, agent = %s, state = %s, finished_at = %s WHERE id = %s"""


def subtask_update(subtask: SubTask) -> None:
    """Store a subtask's text, profile and state (the caller holds its plan's lock)."""
    _rows(SUBTASK_UPDATE, [subtask.name, subtask.description, subtask.expected_outcome,
        subtask.outcome, subtask.agent, subtask.state, _time(subtask.finished_at),
        subtask.pk])  # fmt: skip


# Unlike a caught IntegrityError, ON CONFLICT needs no savepoint to keep the caller's transaction
# usable; the one unique key it can meet is a tool call's stored result. RETURNING: PostgreSQL,
# SQLite 3.35+ (system check E003).
MESSAGE_INSERT = """INSERT INTO planboard_message (session_id, run_id, author_id, role,
    content, tool_calls, tool_call_id, tool_name, answer_id, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT DO NOTHING RETURNING id"""


def message_insert(message: Message) -> bool:
    """Insert a new message; False (nothing stored) when its tool call has a result already."""
    db, calls, message.created_at = _db(), message.tool_calls, timezone.now()
    found = _rows(MESSAGE_INSERT, [
        message.session_id, message.run_id, message.author_id, message.role, message.content,
        None if calls is None else db.ops.adapt_json_value(calls, None), message.tool_call_id,
        message.tool_name, message.answer_id, _time(message.created_at),
    ])  # fmt: skip
    if found:
        message.pk, message._state.adding, message._state.db = found[0][0], False, DEFAULT_DB_ALIAS
    return bool(found)


# Counts a model call and reads, under the row lock it takes, whether its answer still counts.
RUN_COUNT_STEP = """UPDATE planboard_agentrun SET step_count = step_count + 1,
    prompt_tokens = prompt_tokens + %s, completion_tokens = completion_tokens + %s,
    cost_usd = cost_usd + %s
WHERE id = %s RETURNING cancel_requested, lease_owner"""


def run_count_step(
    run_id: int, *, prompt_tokens: int, completion_tokens: int, cost_usd: Decimal
) -> tuple[bool, str] | None:
    """Count a model call and its usage; the run's (cancel_requested, lease_owner), or None."""
    cost = _db().ops.adapt_decimalfield_value(cost_usd)
    params = [prompt_tokens, completion_tokens, cost, run_id]
    found = _rows(RUN_COUNT_STEP, params) if _is_id(run_id) else []
    return (bool(found[0][0]), str(found[0][1])) if found else None


def close_thread_connection() -> None:
    """As a thread that used the database ends (Django opens a connection per thread)."""
    _db().close()


def _db() -> BaseDatabaseWrapper:
    return connections[DEFAULT_DB_ALIAS]


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= ID_MAX


def _locking(locking: str, plain: str) -> str:
    """The statement that locks rows on PostgreSQL; SQLite has none (its writers queue)."""
    return locking if _db().vendor == "postgresql" else plain


def _rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with _db().cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def _plan_at(row: Sequence[Any], at: int) -> Plan:
    """The plan whose columns start at `at`, its owner's username right after them."""
    return _owned(_load(Plan, PLAN_COLUMNS, row[at : at + PLAN_WIDTH]), row[at + PLAN_WIDTH])


@functools.cache
def _converters(model: type[Model], columns: str, vendor: str) -> list[tuple[str, list[Any]]]:
    """Per column ("[alias.]name, ..."): its field's name and the ORM's value converters."""
    db, fields = _db(), {field.attname: field for field in model._meta.concrete_fields}
    found = []
    for name in (column.strip().split(".")[-1] for column in columns.split(",")):
        col = fields[name].get_col(model._meta.db_table)
        steps = db.ops.get_db_converters(col) + col.get_db_converters(db)
        found.append((name, [(step, col) for step in steps]))
    return found


def _load(model: type[M], columns: str, values: Sequence[Any]) -> M:
    """`model` from one row's values, as `raw()` gives it (minus its 0.1 ms resolving columns)."""
    db, converted = _db(), list(values)
    shape = _converters(model, columns, db.vendor)
    for index, (_, steps) in enumerate(shape):
        for convert, col in steps:
            converted[index] = convert(converted[index], col, db)
    return model.from_db(DEFAULT_DB_ALIAS, [name for name, _ in shape], converted)


def _owned(obj: Owned, username: str) -> Owned:
    """`obj.owner` becomes a user with id and username (all a snapshot shows): no query."""
    owner = User.from_db(DEFAULT_DB_ALIAS, ["id", "username"], [obj.owner_id, username])
    type(obj).owner.field.set_cached_value(obj, owner)
    return obj


def _time(value: datetime | None) -> Any:
    """A datetime as the database takes it (SQLite stores naive UTC text)."""
    return _db().ops.adapt_datetimefield_value(value)
