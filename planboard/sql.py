"""The statements every plan tool call, agent step, posted message and signed-in request runs,
written out (Django compiles a queryset anew each call, at more than a local round trip's cost),
then the functions that run them; tests/planboard/test_sql*.py compare each with the ORM on
SQLite and PostgreSQL. The only module that touches a connection (ruff's TID251). Only
`planboard.services` locks and writes (and Django's session store reads the login)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from planboard.instances import Owned, load, with_owner
from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    Toolset,
    ToolsetTool,
)

ID_MAX = 2**63 - 1  # the largest 64-bit primary key

# --- the statements ---------------------------------------------------------------------------

SESSION_COLUMNS = """s.id, s.owner_id, s.title, s.need_user_confirm, s.max_subtasks, s.language,
s.current_plan_id, s.profile_id, s.plan_mode, s.budget_usd, s.budget_tokens, s.spent_usd,
s.spent_tokens, s.created_at, s.updated_at"""
PLAN_COLUMNS = """p.id, p.owner_id, p.session_id, p.name, p.description, p.expected_outcome,
p.state, p.outcome, p.version, p.cost_usd, p.tokens, p.created_at, p.updated_at, p.finished_at"""
SUBTASK_COLUMNS = """id, plan_id, position, name, description, expected_outcome, outcome, state,
agent, cost_usd, tokens, blocked_by, created_at, finished_at"""
RUN_COLUMNS = """r.id, r.session_id, r.status, r.error, r.model, r.cancel_requested, r.step_count,
r.prompt_tokens, r.completion_tokens, r.cost_usd, r.created_at, r.started_at, r.finished_at,
r.lease_owner, r.pause_reason, r.lease_expires_at, r.waits"""
# What a step uses of an offered tool (the toolset's other fields load on first use).
TOOL_COLUMNS = """t.id, t.toolset_id, t.name, t.description, t.input_schema, t.read_only,
t.policy, t.needs_review, t.reads_resources"""
# A snapshot's columns (`snapshots.SUBTASK_FIELDS`), times as text (`snapshots.iso`): instances
# and parsing the times made a 1000-subtask snapshot take 15-30 ms instead of 3.
SUBTASK_VALUE_COLUMNS = """t.id, t.position, t.name, t.description, t.expected_outcome,
    t.outcome, t.state, t.agent, t.blocked_by, CAST(t.created_at AS TEXT),
    CAST(t.finished_at AS TEXT)"""
SESSION_WIDTH, PLAN_WIDTH, RUN_WIDTH, VALUES_WIDTH = (
    c.count(",") + 1 for c in (SESSION_COLUMNS, PLAN_COLUMNS, RUN_COLUMNS, SUBTASK_VALUE_COLUMNS)
)
# The session row's plan (after the session's owner), run (after the plan's owner and flag).
PLAN_AT = SESSION_WIDTH + 1
RUN_AT = PLAN_AT + PLAN_WIDTH + 2
SP_WIDTH = RUN_AT + RUN_WIDTH + 1

# The CTE is the session's one row (with a step's run, then the session's message count), first;
# then, in plan mode, a row per subtask of its plan (joined, each would repeat and reparse it).
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
SELECT sp.*, -1, {", ".join(["NULL"] * VALUES_WIDTH)} FROM sp
UNION ALL SELECT {", ".join(["NULL"] * SP_WIDTH)}, t.position, {SUBTASK_VALUE_COLUMNS}
FROM sp JOIN planboard_subtask t ON t.plan_id = sp.current_plan_id AND sp.plan_mode
ORDER BY {SP_WIDTH + 1}"""

# `OF s`: never the owner's row. SQLite has no row locks (its writers queue): it just reads.
SESSION = f"""SELECT {SESSION_COLUMNS}, so.username
FROM planboard_chatsession s JOIN auth_user so ON so.id = s.owner_id WHERE s.id = %s"""
LOCK_SESSION = f"{SESSION} FOR NO KEY UPDATE OF s"

# The sub-select locks the session before the statement locks the plan (`OF p`: not the user):
# the one lock order, one round trip.
PLAN = f"""SELECT {PLAN_COLUMNS}, po.username
FROM planboard_plan p JOIN auth_user po ON po.id = p.owner_id WHERE p.id = %s"""
LOCK_PLAN = f"""{PLAN} AND (p.session_id IS NULL OR EXISTS (
    SELECT 1 FROM planboard_chatsession s WHERE s.id = p.session_id FOR NO KEY UPDATE))
FOR NO KEY UPDATE OF p"""

SUBTASKS = f"SELECT {SUBTASK_COLUMNS} FROM planboard_subtask WHERE plan_id = %s ORDER BY position"

# The queryset of `selectors.session_tools` took 2.5 ms to compile against 0.4 ms to run.
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

# Never the usage counters: steps add to them without the plan's lock (`run_record_step`).
PLAN_UPDATE = """UPDATE planboard_plan SET name = %s, description = %s, expected_outcome = %s,
    version = %s, state = %s, outcome = %s, finished_at = %s, session_id = %s, updated_at = %s
WHERE id = %s"""

# Never a subtask's position (moved with its neighbours' by the ORM), its usage counters nor
# its blockers (the ORM writes them: no tool call's hot path).
SUBTASK_UPDATE = """UPDATE planboard_subtask SET name = %s, description = %s,
    expected_outcome = %s, outcome = %s, agent = %s, state = %s, finished_at = %s WHERE id = %s"""

# ON CONFLICT, unlike a caught IntegrityError, needs no savepoint (a tool call's stored result is
# the one unique key it can meet). RETURNING: PostgreSQL, SQLite 3.35+ (system check E003).
MESSAGE_INSERT = """INSERT INTO planboard_message (session_id, run_id, author_id, role,
    content, tool_calls, tool_call_id, tool_name, answer_id, attachments, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id"""

# Every plan change's history row. The `seen_*` columns start empty (NULL).
EVENT_INSERT = """INSERT INTO planboard_planevent (plan_id, version, action, actor_user_id,
    actor_run_id, subtask_id, before, after, patch, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"""

# A call's usage where it was spent, new totals back (the one lock order: session, plan,
# subtask, run); the run's row also says, under its lock, whether the answer still counts.
ADD_USAGE = [f"""UPDATE planboard_{t} SET {c} = {c} + %s, {n} = {n} + %s WHERE id = %s{w}
    RETURNING {c}, {n}""" for t, c, n, w in [("chatsession", "spent_usd", "spent_tokens", ""),
    ("plan", "cost_usd", "tokens", ""), ("subtask", "cost_usd", "tokens", " AND plan_id = %s")]
]  # fmt: skip
RUN_COUNT_STEP = """UPDATE planboard_agentrun SET step_count = step_count + 1, prompt_tokens =
    prompt_tokens + %s, completion_tokens = completion_tokens + %s, cost_usd = cost_usd + %s
WHERE id = %s RETURNING cancel_requested, lease_owner"""

# A posted message's statements (`services.message_post`: about half its ORM's CPU was compiling).
SESSION_OWNER = "SELECT owner_id FROM planboard_chatsession WHERE id = %s"
LATEST_RUN = f"""SELECT {RUN_COLUMNS} FROM planboard_agentrun r WHERE r.session_id = %s
ORDER BY r.id DESC LIMIT 1"""
LOCK_USER = "SELECT id FROM auth_user WHERE id = %s FOR NO KEY UPDATE"
# Admission: the owner's queued and running runs (few: the cap, and those waiting behind it),
# each with whether it has a dispatch deadline (queued without one: waiting for admission).
ACTIVE_RUNS_OF = """SELECT r.id, r.status, r.lease_expires_at IS NOT NULL FROM planboard_agentrun r
JOIN planboard_chatsession s ON s.id = r.session_id
WHERE s.owner_id = %s AND r.status IN ('queued', 'running')"""
SESSION_TITLE = "UPDATE planboard_chatsession SET title = %s, updated_at = %s WHERE id = %s"
# A new run: every column but its id (`RUN_COLUMNS`).
RUN_FIELDS = [column.strip().removeprefix("r.") for column in RUN_COLUMNS.split(",")][1:]
RUN_INSERT = f"""INSERT INTO planboard_agentrun ({", ".join(RUN_FIELDS)})
VALUES ({", ".join(["%s"] * len(RUN_FIELDS))}) RETURNING id"""
# Every signed-in request's login session and user (`planboard.login`).
LOGIN_SESSION = """SELECT session_data FROM django_session
WHERE session_key = %s AND expire_date > %s"""
USER_COLUMNS = """id, password, last_login, is_superuser, username, first_name, last_name, email,
is_staff, is_active, date_joined"""
USER = f"SELECT {USER_COLUMNS} FROM auth_user WHERE id = %s"

# --- the functions that run them ----------------------------------------------------------

SessionRead = tuple[ChatSession, Plan | None, bool, AgentRun | None, int | None, list[tuple]]


def session_with_plan(session_id: int, run_id: int | None = None) -> SessionRead | None:
    """What every tool call and step starts with: the session, its plan (owners' names on both),
    whether a call is flagged, the run `run_id` (None: gone), messages, plan mode's subtasks."""
    run_key = run_id if _is_id(run_id) else None
    found = _rows(SESSION_WITH_PLAN, [run_key, session_id]) if _is_id(session_id) else []
    if not found:
        return None
    row = found[0]
    session = _owned(ChatSession, SESSION_COLUMNS, row)
    plan = None if row[PLAN_AT] is None else _owned(Plan, PLAN_COLUMNS, row, PLAN_AT)
    ChatSession._meta.get_field("current_plan").set_cached_value(session, plan)
    run_values = row[RUN_AT : RUN_AT + RUN_WIDTH]
    run = None if run_values[0] is None else load(_db(), AgentRun, RUN_COLUMNS, run_values)
    flagged, messages = bool(row[RUN_AT - 1]), row[SP_WIDTH - 1]
    return session, plan, flagged, run, messages, [r[SP_WIDTH + 1 :] for r in found[1:]]


def lock_session(session_id: int) -> ChatSession | None:
    """Lock the session (in the caller's transaction), its owner's name attached; None: none."""
    found = _rows(_locking(LOCK_SESSION, SESSION), [session_id]) if _is_id(session_id) else []
    return _owned(ChatSession, SESSION_COLUMNS, found[0]) if found else None


def plan(plan_id: int) -> Plan | None:
    """The plan, its owner's name attached, unlocked (what an edit's permission check reads)."""
    found = _rows(PLAN, [plan_id]) if _is_id(plan_id) else []
    return _owned(Plan, PLAN_COLUMNS, found[0]) if found else None


def lock_plan(plan_id: int) -> Plan | None:
    """Lock the plan's session, then the plan (in the caller's transaction); None: no plan."""
    found = _rows(_locking(LOCK_PLAN, PLAN), [plan_id]) if _is_id(plan_id) else []
    return _owned(Plan, PLAN_COLUMNS, found[0]) if found else None


def lock_plan_and_subtasks(plan_id: int) -> tuple[Plan, list[SubTask]] | None:
    """`lock_plan`, then its subtasks in board order. Not one statement: one that waited for the
    lock reads as it started (READ COMMITTED), missing what the transaction ahead changed."""
    plan, db = lock_plan(plan_id), _db()
    if plan is None:
        return None
    return plan, [load(db, SubTask, SUBTASK_COLUMNS, row) for row in _rows(SUBTASKS, [plan.pk])]


def offered_tools(session_id: int, owner_id: int) -> list[ToolsetTool]:
    """The session's offered tools, each with its toolset (id and name: the rest loads on use)."""
    found = _rows(OFFERED_TOOLS, [session_id, owner_id, owner_id]) if _is_id(session_id) else []
    db = _db()
    tools = [load(db, ToolsetTool, TOOL_COLUMNS, row[:-1]) for row in found]
    for tool, row in zip(tools, found, strict=True):
        toolset = Toolset.from_db(DEFAULT_DB_ALIAS, ["id", "name"], [tool.toolset_id, row[-1]])
        ToolsetTool.toolset.field.set_cached_value(tool, toolset)
    return tools


def session_owner_id(session_id: int) -> int | None:
    """The session's owner (None: no such session)."""
    found = _rows(SESSION_OWNER, [session_id]) if _is_id(session_id) else []
    return int(found[0][0]) if found else None


def latest_run(session_id: int) -> AgentRun | None:
    """The session's newest run (None: it has none)."""
    found = _rows(LATEST_RUN, [session_id]) if _is_id(session_id) else []
    return load(_db(), AgentRun, RUN_COLUMNS, found[0]) if found else None


def lock_user(user_id: int) -> None:
    """Lock the user's row (in the caller's transaction): admission's lock."""
    if _is_id(user_id):
        _rows(_locking(LOCK_USER, LOCK_USER.removesuffix(" FOR NO KEY UPDATE")), [user_id])


def active_runs_of(user_id: int) -> list[tuple[int, str, bool]]:
    """The owner's queued and running runs: id, status, whether it has a dispatch deadline."""
    found = _rows(ACTIVE_RUNS_OF, [user_id]) if _is_id(user_id) else []
    return [(int(pk), str(status), bool(deadline)) for pk, status, deadline in found]


def session_set_title(session_id: int, title: str) -> datetime:
    """Set the session's title and `updated_at` (now, returned)."""
    now = timezone.now()
    _rows(SESSION_TITLE, [title, _time(now), session_id], fetch=False)
    return now


def plan_update(plan: Plan) -> None:
    """Store what a change sets on the locked plan row (as `save()` would, `updated_at` now)."""
    plan.updated_at = timezone.now()
    _rows(PLAN_UPDATE, [plan.name, plan.description, plan.expected_outcome, plan.version,
        plan.state, plan.outcome, _time(plan.finished_at), plan.session_id,
        _time(plan.updated_at), plan.pk], fetch=False)  # fmt: skip


def subtask_update(subtask: SubTask) -> None:
    """Store a subtask's text, profile and state (the caller holds its plan's lock)."""
    _rows(SUBTASK_UPDATE, [subtask.name, subtask.description, subtask.expected_outcome,
        subtask.outcome, subtask.agent, subtask.state, _time(subtask.finished_at),
        subtask.pk], fetch=False)  # fmt: skip


def message_insert(message: Message) -> bool:
    """Insert a new message; False (nothing stored) when its tool call has a result already."""
    db, calls, message.created_at = _db(), message.tool_calls, timezone.now()
    found = _rows(MESSAGE_INSERT, [
        message.session_id, message.run_id, message.author_id, message.role, message.content,
        None if calls is None else db.ops.adapt_json_value(calls, None), message.tool_call_id,
        message.tool_name, message.answer_id, _json(db, message.attachments),
        _time(message.created_at),
    ])  # fmt: skip
    if found:
        message.pk, message._state.adding, message._state.db = found[0][0], False, DEFAULT_DB_ALIAS
    return bool(found)


def run_insert(run: AgentRun) -> None:
    """Insert a new run (as `save()` would, `created_at` now)."""
    run.created_at = timezone.now()
    values = [getattr(run, name) for name in RUN_FIELDS]
    found = _rows(RUN_INSERT, [_time(v) if isinstance(v, datetime) else v for v in values])
    run.pk, run._state.adding, run._state.db = found[0][0], False, DEFAULT_DB_ALIAS


def login_session_data(session_key: str | None) -> str | None:
    """The encoded data of an unexpired login session (None: no such session)."""
    found = _rows(LOGIN_SESSION, [session_key, _time(timezone.now())]) if session_key else []
    return str(found[0][0]) if found else None


def user(user_id: int) -> User | None:
    """The user (None: no such user)."""
    found = _rows(USER, [user_id]) if _is_id(user_id) else []
    return load(_db(), User, USER_COLUMNS, found[0]) if found else None


def event_insert(event: PlanEvent) -> None:
    """Insert a new plan event (as `save(force_insert=True)` would, `created_at` now)."""
    db, event.created_at = _db(), timezone.now()
    found = _rows(EVENT_INSERT, [
        event.plan_id, event.version, event.action, event.actor_user_id, event.actor_run_id,
        event.subtask_id, _json(db, event.before), _json(db, event.after),
        _json(db, event.patch), _time(event.created_at),
    ])  # fmt: skip
    event.pk, event._state.adding, event._state.db = found[0][0], False, DEFAULT_DB_ALIAS


def run_count_step(
    run_id: int, *, prompt_tokens: int, completion_tokens: int, cost_usd: Decimal,
    session_id: int | None = None, plan_id: int | None = None, subtask_id: int | None = None,
) -> tuple[bool, str, tuple[Any, ...]] | None:  # fmt: skip
    """Add a call's usage to its session, plan, subtask (None: not spent there), then count it on
    the run: its cancel flag, lease owner, the session's, plan's and subtask's new totals (cost,
    tokens each); None: no run."""
    cost, totals = _db().ops.adapt_decimalfield_value(cost_usd), list[Any]()
    where = [[session_id], [plan_id], [subtask_id, plan_id]]
    for statement, keys in zip(ADD_USAGE, where, strict=True):
        spent = [cost, prompt_tokens + completion_tokens, *keys]
        found = _rows(statement, spent) if all(map(_is_id, keys)) else []
        totals += found[0] if found else (None, None)
    counted = [prompt_tokens, completion_tokens, cost, run_id]
    found = _rows(RUN_COUNT_STEP, counted) if _is_id(run_id) else []
    return (bool(found[0][0]), str(found[0][1]), tuple(totals)) if found else None


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


def _rows(sql: str, params: Sequence[Any], *, fetch: bool = True) -> list[tuple[Any, ...]]:
    """The statement's rows (without asking psycopg whether it has any: that costs more)."""
    with _db().cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if fetch else []


def _owned(model: type[Owned], columns: str, row: Sequence[Any], at: int = 0) -> Owned:
    """The session or plan whose columns start at `at`, its owner's username right after them."""
    end = at + columns.count(",") + 1
    return with_owner(load(_db(), model, columns, row[at:end]), row[end])


def _json(db: BaseDatabaseWrapper, value: Any) -> Any:
    """A JSON field's value as the database takes it; None stays SQL NULL, as the ORM stores it."""
    return None if value is None else db.ops.adapt_json_value(value, None)


def _time(value: datetime | None) -> Any:
    """A datetime as the database takes it (SQLite stores naive UTC text)."""
    return _db().ops.adapt_datetimefield_value(value)
