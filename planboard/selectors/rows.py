"""The rows every plan change and agent step reads, without the ORM's per-call cost.

Each statement is built once per process from the models' metadata (`planboard.prepared`
says why and how) and gives the same model instances or values the ORM would.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import DateTimeField, ForeignKey, Model

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
from planboard.prepared import M, column_of, columns, converted, fetch, field_of, instances
from planboard.snapshots import SUBTASK_FIELDS


def attach_owner(obj: Plan | ChatSession, username: str) -> None:
    """Give `obj.owner` a user carrying only id and username (all a snapshot shows), so
    reading it costs no query; other fields load on first use like any deferred field."""
    user_model = get_user_model()
    owner = user_model.from_db(
        DEFAULT_DB_ALIAS,
        [user_model._meta.pk.attname, user_model.USERNAME_FIELD],
        [obj.owner_id, username],
    )
    type(obj)._meta.get_field("owner").set_cached_value(obj, owner)


def owner_username_join(table: str) -> tuple[str, str]:
    """(select expression, join clause) for the owner's username of rows of `table`."""
    connection = connections[DEFAULT_DB_ALIAS]
    quote = connection.ops.quote_name
    user_model = get_user_model()
    username = column_of(field_of(user_model, user_model.USERNAME_FIELD))
    user_pk = column_of(field_of(user_model, user_model._meta.pk.name))
    return (
        f'"owner".{quote(username)}',
        f'INNER JOIN {quote(user_model._meta.db_table)} "owner" '
        f'ON "owner".{quote(user_pk)} = {quote(table)}."owner_id"',
    )


OwnedModel = TypeVar("OwnedModel", Plan, ChatSession)


@functools.cache
def owned_row_sql(model: type[Model], vendor: str, *, locked: bool = False) -> str:
    """One row of `model` by id with its owner's username (`fetch_owned` reads it); `locked`
    takes the row lock on PostgreSQL (`FOR NO KEY UPDATE OF` the row only)."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    table = quote(model._meta.db_table)
    username, join = owner_username_join(model._meta.db_table)
    lock = f" FOR NO KEY UPDATE OF {table}" if locked and vendor == "postgresql" else ""
    return (
        f"SELECT {columns(model)}, {username} FROM {table} {join} "
        f"WHERE {table}.{quote('id')} = %s{lock}"
    )


def fetch_owned(model: type[OwnedModel], sql: str, params: Sequence[Any]) -> OwnedModel | None:
    """The row `sql` selects (`columns(model)` then the owner's username), or None."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    (found,) = instances(model, [row])
    attach_owner(found, row[-1])
    return found


def plan(plan_id: int) -> Plan | None:
    """The plan with its owner's username, or None."""
    vendor = connections[DEFAULT_DB_ALIAS].vendor
    return fetch_owned(Plan, owned_row_sql(Plan, vendor), [plan_id])


@functools.cache
def _subtasks_sql(vendor: str) -> str:
    table = SubTask._meta.db_table
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return (
        f"SELECT {columns(SubTask)} FROM {quote(table)} "
        f"WHERE {quote('plan_id')} = %s ORDER BY {quote('position')}"
    )


def subtasks(plan_id: int) -> list[SubTask]:
    """The plan's subtasks in board order."""
    return fetch(SubTask, _subtasks_sql(connections[DEFAULT_DB_ALIAS].vendor), [plan_id])


@functools.cache
def _subtask_values_shape(vendor: str) -> tuple[str, list[tuple[int, list[Any]]]]:
    connection = connections[DEFAULT_DB_ALIAS]
    quote = connection.ops.quote_name
    table = SubTask._meta.db_table
    fields = [field_of(SubTask, name) for name in SUBTASK_FIELDS]
    selected: list[str] = []
    converters: list[tuple[int, list[Any]]] = []
    for index, field in enumerate(fields):
        column = field.get_col(table)
        if vendor == "postgresql" and isinstance(field, DateTimeField):
            # Django's timestamptz loader is Python code (~3 µs a value, then isoformat()
            # again): most of a large plan's read. PostgreSQL writes the snapshot's ISO text
            # itself, exactly as Python's isoformat() would (UTC, "+00:00", no fraction when
            # the microseconds are 0); tests/planboard/test_rows.py compares the two.
            name = quote(column_of(field))
            utc = f"({name} AT TIME ZONE 'UTC')"
            selected.append(
                f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN "
                f"date_part('microseconds', {utc})::int %% 1000000 = 0 THEN '' "
                f"ELSE to_char({utc}, '.US') END || '+00:00'"
            )
            continue
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if vendor == "sqlite" and isinstance(field, DateTimeField):
            # The same idea as PostgreSQL's to_char above. Cast to text: a column declared
            # as a datetime would be parsed by the sqlite3 module on fetch already.
            selected.append(f"CAST({quote(column_of(field))} AS TEXT)")
            converters.append((index, [(_sqlite_iso, column)]))
            continue
        selected.append(quote(column_of(field)))
        if found:
            converters.append((index, [(fn, column) for fn in found]))
    sql = (
        f"SELECT {', '.join(selected)} FROM {quote(table)} "
        f"WHERE {quote('plan_id')} = %s ORDER BY {quote('position')}"
    )
    return sql, converters


def _sqlite_iso(value: Any, expression: Any, connection: Any) -> Any:
    """A SQLite datetime as the snapshot's ISO text. Django stores UTC as `str(datetime)`
    ("YYYY-MM-DD HH:MM:SS[.ffffff]"), which is `isoformat()` with a space: re-punctuated
    here instead of parsed and formatted again per value (most of a 1000-subtask read);
    any other shape goes through Django's own parsing."""
    if value is None:
        return None
    text = str(value)
    if len(text) in (19, 26) and text[10] == " ":
        return f"{text[:10]}T{text[11:]}+00:00"
    parsed = connection.ops.convert_datetimefield_value(value, expression, connection)
    return parsed.isoformat() if parsed is not None else None


def subtask_values(plan_id: int) -> list[Sequence[Any]]:
    """The plan's subtasks in board order as SUBTASK_FIELDS values: what a snapshot shows,
    without building model instances (a 1000-subtask plan is read in a few milliseconds)."""
    connection = connections[DEFAULT_DB_ALIAS]
    sql, converters = _subtask_values_shape(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, [plan_id])
        found = cursor.fetchall()
    if not converters:
        return found
    converted: list[Sequence[Any]] = []
    for row in found:
        values = list(row)
        for index, steps in converters:
            for convert, expression in steps:
                values[index] = convert(values[index], expression, connection)
        converted.append(values)
    return converted


def session(session_id: int) -> ChatSession | None:
    """The chat session with its owner's username, or None."""
    vendor = connections[DEFAULT_DB_ALIAS].vendor
    return fetch_owned(ChatSession, owned_row_sql(ChatSession, vendor), [session_id])


@functools.cache
def _session_with_plan_sql(vendor: str, with_run: bool = False) -> str:
    session_name, session_join = owner_username_join(ChatSession._meta.db_table)
    user_model = get_user_model()
    username = column_of(field_of(user_model, user_model.USERNAME_FIELD))
    user_pk = column_of(field_of(user_model, user_model._meta.pk.name))
    run_columns = f"{columns(AgentRun)}, " if with_run else ""
    source = (
        f"{_table(AgentRun)} INNER JOIN {_table(ChatSession)} "
        f"ON {_column(ChatSession, 'id')} = {_column(AgentRun, 'session')}"
        if with_run
        else _table(ChatSession)
    )
    wanted = _column(AgentRun, "id") if with_run else _column(ChatSession, "id")
    return (
        f"SELECT {run_columns}{columns(ChatSession)}, {session_name}, {columns(Plan)}, "
        f'"plan_owner".{_quote(username)} FROM {source} {session_join} '
        f"LEFT OUTER JOIN {_table(Plan)} "
        f"ON {_column(Plan, 'id')} = {_column(ChatSession, 'current_plan')} "
        f'LEFT OUTER JOIN {_quote(user_model._meta.db_table)} "plan_owner" '
        f'ON "plan_owner".{_quote(user_pk)} = {_column(Plan, "owner")} '
        f"WHERE {wanted} = %s"
    )


def _session_and_plan(row: Sequence[Any]) -> tuple[ChatSession, Plan | None]:
    """The session and its current plan from a row of `_session_with_plan_sql`'s columns."""
    width = len(ChatSession._meta.concrete_fields)
    (found,) = instances(ChatSession, [row[:width]])
    attach_owner(found, row[width])
    plan_row = row[width + 1 :]
    if plan_row[0] is None:
        return found, None
    (current,) = instances(Plan, [plan_row[:-1]])
    attach_owner(current, plan_row[-1])
    _cache_related(found, "current_plan", current)
    return found, current


def session_with_plan(session_id: int) -> tuple[ChatSession, Plan | None] | None:
    """The chat session and its current plan (each with its owner's username) in one
    statement: every agent step and plan tool call starts with both. None: no session."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_session_with_plan_sql(connection.vendor), [session_id])
        row = cursor.fetchone()
    return _session_and_plan(row) if row is not None else None


def run_with_session_and_plan(
    run_id: int,
) -> tuple[AgentRun, ChatSession, Plan | None] | None:
    """The run's row as it is now, with its session and the session's current plan, in one
    statement: what the agent loop reads before each step. None: no such run."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_session_with_plan_sql(connection.vendor, with_run=True), [run_id])
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(AgentRun._meta.concrete_fields)
    (run,) = instances(AgentRun, [row[:width]])
    session, plan = _session_and_plan(row[width:])
    _cache_related(run, "session", session)
    return run, session, plan


# --- what an agent step reads -------------------------------------------------------------


def _quote(name: str) -> str:
    return connections[DEFAULT_DB_ALIAS].ops.quote_name(name)


def _table(model: type[Model]) -> str:
    return _quote(model._meta.db_table)


def _column(model: type[Model], name: str) -> str:
    """`"table"."column"` of the model's field `name`."""
    return f"{_table(model)}.{_quote(column_of(field_of(model, name)))}"


def _first(model: type[M], sql: str, params: Sequence[Any]) -> M | None:
    found = fetch(model, sql, params)
    return found[0] if found else None


def _attach(
    obj: Model, relation: str, model: type[Model], names: list[str], values: list[Any]
) -> None:
    """Cache a related object carrying only `names` (others load on first use), so following
    `obj.<relation>` costs no query; nothing is cached when the relation is empty."""
    related = model.from_db(DEFAULT_DB_ALIAS, names, values) if values[0] is not None else None
    _cache_related(obj, relation, related)


def _cache_related(obj: Model, relation: str, related: Model | None) -> None:
    field = type(obj)._meta.get_field(relation)
    if not isinstance(field, ForeignKey):
        raise TypeError(f"{type(obj).__name__}.{relation} is not a foreign key")
    field.set_cached_value(obj, related)


@functools.cache
def _by_id_sql(model: type[Model], vendor: str) -> str:
    return f"SELECT {columns(model)} FROM {_table(model)} WHERE {_column(model, 'id')} = %s"


def agent_run(run_id: int) -> AgentRun | None:
    """The run's row as it is now (what `refresh_from_db()` reads)."""
    return _first(AgentRun, _by_id_sql(AgentRun, connections[DEFAULT_DB_ALIAS].vendor), [run_id])


@functools.cache
def _messages_from_sql(vendor: str) -> str:
    return (
        f"SELECT {columns(Message)} FROM {_table(Message)} "
        f"WHERE {_column(Message, 'session')} = %s AND {_column(Message, 'id')} >= %s "
        f"ORDER BY {_column(Message, 'id')}"
    )


def messages_from(session_id: int, first_id: int) -> list[Message]:
    """The session's messages from id `first_id` on, oldest first."""
    vendor = connections[DEFAULT_DB_ALIAS].vendor
    return fetch(Message, _messages_from_sql(vendor), [session_id, first_id])


@functools.cache
def _transcript_sql(vendor: str) -> str:
    width = len(Message._meta.concrete_fields)
    only_id = ", ".join([_column(Message, "id"), *(["NULL"] * (width - 1))])
    where = f"WHERE {_column(Message, 'session')} = %s AND {_column(Message, 'id')}"
    return (
        f"SELECT {columns(Message)}, 1 FROM {_table(Message)} {where} > %s "
        f"UNION ALL SELECT {only_id}, 0 FROM {_table(Message)} {where} <= %s ORDER BY 1"
    )


def transcript_after(session_id: int, known_up_to: int) -> list[tuple[int, Message | None]]:
    """Every message id of the session, oldest first, with the whole message for ids above
    `known_up_to` (None for the others): what a step needs of the transcript, in one
    statement, when it already holds the messages up to `known_up_to`."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(
            _transcript_sql(connection.vendor),
            [session_id, known_up_to, session_id, known_up_to],
        )
        found = cursor.fetchall()
    whole = iter(instances(Message, [row for row in found if row[-1]]))
    return [(row[0], next(whole) if row[-1] else None) for row in found]


@functools.cache
def _events_since_sql(vendor: str) -> str:
    user_model = get_user_model()
    username = column_of(field_of(user_model, user_model.USERNAME_FIELD))
    user_pk = column_of(field_of(user_model, user_model._meta.pk.name))
    return (
        f"SELECT {columns(PlanEvent)}, {_column(Plan, 'session')}, "
        f'"actor".{_quote(user_pk)}, "actor".{_quote(username)} '
        f"FROM {_table(PlanEvent)} "
        f"INNER JOIN {_table(Plan)} ON {_column(Plan, 'id')} = {_column(PlanEvent, 'plan')} "
        f'LEFT OUTER JOIN {_quote(user_model._meta.db_table)} "actor" '
        f'ON "actor".{_quote(user_pk)} = {_column(PlanEvent, "actor_user")} '
        f"WHERE {_column(PlanEvent, 'plan')} = %s AND {_column(PlanEvent, 'version')} > %s "
        f"ORDER BY {_column(PlanEvent, 'version')} LIMIT %s"
    )


def plan_events_since(plan_id: int, version: int, limit: int) -> list[PlanEvent]:
    """The plan's events after `version` (at most `limit`, oldest first), with what
    `serialize_event` follows — the plan's session, the acting user's name, the acting run's
    id — already attached."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_events_since_sql(connection.vendor), [plan_id, version, limit])
        found = cursor.fetchall()
    events = instances(PlanEvent, found)
    user_model = get_user_model()
    user_names = [user_model._meta.pk.attname, user_model.USERNAME_FIELD]
    for event, row in zip(events, found, strict=True):
        session_id, user_id, username = row[-3:]
        _attach(event, "plan", Plan, ["id", "session_id"], [event.plan_id, session_id])
        _attach(event, "actor_user", user_model, user_names, [user_id, username])
        _attach(event, "actor_run", AgentRun, ["id"], [event.actor_run_id])
    return events


# What a step uses of an offered tool and of its toolset. Never the toolset's cached listing
# (it lists every tool of the toolset: one copy per offered tool made a step quadratic), its
# secrets or how its server starts (read when a call is made: `services.tool_call_claim`).
OFFERED_TOOL_FIELDS = (
    "id",
    "toolset",
    "name",
    "description",
    "input_schema",
    "read_only",
    "policy",
    "needs_review",
)
OFFERED_TOOLSET_FIELDS = ("id", "name")


def _offered_tools_sql(vendor: str, more_columns: str = "") -> str:
    """The session's offered tools with their toolsets (`OFFERED_TOOL_FIELDS`, then
    `OFFERED_TOOLSET_FIELDS`, then `more_columns`), unordered; two parameters: the session's
    id, the `never` policy. Tools its server still lists, of enabled toolsets the session
    enables, not set to `never`."""
    true = "true" if vendor == "postgresql" else "1"
    return (
        f"SELECT {columns(ToolsetTool, OFFERED_TOOL_FIELDS)}, "
        f"{columns(Toolset, OFFERED_TOOLSET_FIELDS)}{more_columns} "
        f"FROM {_table(ToolsetTool)} INNER JOIN {_table(Toolset)} "
        f"ON {_column(Toolset, 'id')} = {_column(ToolsetTool, 'toolset')} "
        f"INNER JOIN {_table(SessionToolset)} "
        f"ON {_column(SessionToolset, 'toolset')} = {_column(Toolset, 'id')} "
        f"WHERE {_column(SessionToolset, 'session')} = %s AND {_column(Toolset, 'enabled')} = "
        f"{true} AND {_column(ToolsetTool, 'available')} = {true} "
        f"AND {_column(ToolsetTool, 'policy')} <> %s"
    )


def _tools_with_toolsets(found: Sequence[Sequence[Any]]) -> list[ToolsetTool]:
    """Tools from rows that start with `_offered_tools_sql`'s columns, toolsets attached
    (fields not read load on first use, like any deferred field)."""
    width = len(OFFERED_TOOL_FIELDS)
    tools = instances(ToolsetTool, found, OFFERED_TOOL_FIELDS)
    toolsets = instances(Toolset, [row[width:] for row in found], OFFERED_TOOLSET_FIELDS)
    for tool, toolset in zip(tools, toolsets, strict=True):
        _cache_related(tool, "toolset", toolset)
    return tools


@functools.cache
def _session_tools_sql(vendor: str) -> str:
    return (
        f"{_offered_tools_sql(vendor)} "
        f"ORDER BY {_column(Toolset, 'name')}, {_column(ToolsetTool, 'name')}"
    )


def session_tools(session_id: int) -> list[ToolsetTool]:
    """What `selectors.session_tools` answers (each tool with its toolset attached)."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(
            _session_tools_sql(connection.vendor), [session_id, ToolsetTool.Policy.NEVER.value]
        )
        return _tools_with_toolsets(cursor.fetchall())


@functools.cache
def _tools_and_flagged_calls_sql(vendor: str) -> str:
    """Two row kinds in one statement (UNION ALL; the other kind's columns are NULL): the
    session's offered tools with their toolsets, then its flagged tool calls."""
    tool_width = len(OFFERED_TOOL_FIELDS) + len(OFFERED_TOOLSET_FIELDS)
    call_width = len(ToolCall._meta.concrete_fields)
    tool_nulls = ", ".join(["NULL"] * tool_width)
    call_nulls = ", ".join(["NULL"] * call_width)
    # 1-based positions for ORDER BY: kind, toolset name, tool name, call id.
    kind = tool_width + call_width + 1
    toolset_name = len(OFFERED_TOOL_FIELDS) + OFFERED_TOOLSET_FIELDS.index("name") + 1
    tool_name = OFFERED_TOOL_FIELDS.index("name") + 1
    call_id = tool_width + _position(ToolCall, "id")
    return (
        f"{_offered_tools_sql(vendor, f', {call_nulls}, 0')} "
        f"UNION ALL SELECT {tool_nulls}, {columns(ToolCall)}, 1 FROM {_table(ToolCall)} "
        f"WHERE {_column(ToolCall, 'session')} = %s AND ({_column(ToolCall, 'always_allow')} "
        f"OR {_column(ToolCall, 'status')} = %s) "
        f"ORDER BY {kind}, {toolset_name}, {tool_name}, {call_id}"
    )


def _position(model: type[Model], name: str) -> int:
    """1-based position of the field `name` among `columns(model)`."""
    return [f.name for f in model._meta.concrete_fields].index(name) + 1


def session_tools_and_flagged_calls(session_id: int) -> tuple[list[ToolsetTool], list[ToolCall]]:
    """`session_tools`, and the session's tool calls someone chose to "always allow" or
    that wait for a person (oldest first), in one statement: what every agent step reads of
    the session's external tools."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(
            _tools_and_flagged_calls_sql(connection.vendor),
            [
                session_id,
                ToolsetTool.Policy.NEVER.value,
                session_id,
                ToolCall.Status.PENDING.value,
            ],
        )
        found = cursor.fetchall()
    toolset_end = len(OFFERED_TOOL_FIELDS) + len(OFFERED_TOOLSET_FIELDS)
    tools = _tools_with_toolsets([row[:toolset_end] for row in found if not row[-1]])
    calls = instances(ToolCall, [row[toolset_end:-1] for row in found if row[-1]])
    return tools, calls


@functools.cache
def _plan_usage_sql(vendor: str) -> str:
    return (
        f"SELECT {_column(Plan, 'cost_usd')}, {_column(Plan, 'tokens')}, "
        f"{_column(SubTask, 'id')}, {_column(SubTask, 'cost_usd')}, {_column(SubTask, 'tokens')} "
        f"FROM {_table(Plan)} LEFT OUTER JOIN {_table(SubTask)} "
        f"ON {_column(SubTask, 'plan')} = {_column(Plan, 'id')} "
        f"WHERE {_column(Plan, 'id')} = %s ORDER BY {_column(SubTask, 'position')}"
    )


def plan_usage(plan_id: int) -> list[tuple[Any, ...]]:
    """(plan cost, plan tokens, subtask id, subtask cost, subtask tokens) per subtask of the
    plan in board order (one row with NULL subtask values when it has none; no rows when
    there is no such plan). Sent to clients after every agent step."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_plan_usage_sql(connection.vendor), [plan_id])
        found = cursor.fetchall()
    shape = [field_of(Plan, "cost_usd"), None, None, field_of(SubTask, "cost_usd"), None]
    return [converted(row, shape) for row in found]
