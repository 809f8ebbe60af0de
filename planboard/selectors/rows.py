"""Loading the rows every plan change and agent step reads, without the ORM's per-call cost.

Django compiles a queryset to SQL on every execution; on our 2-core machines that costs about
0.4 ms per statement, more than the database round trip itself, and a plan tool call runs a
handful of them (docs/PERFORMANCE.md). The few statements on that hot path are built here
once per process *from the models' own metadata* (columns, converters), executed with
parameters, and turned into ordinary model instances with `Model.from_db`, exactly as the ORM
would — a new model field needs no change here. Everything else uses the ORM.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import DateTimeField, Field, Model

from planboard.models import ChatSession, Plan, SubTask
from planboard.snapshots import SUBTASK_FIELDS

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    """The model's concrete field `name` (never a reverse relation)."""
    found = model._meta.get_field(name)
    if not isinstance(found, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return found


def column_of(field: Field[Any, Any]) -> str:
    if field.column is None:  # only non-concrete fields lack a column
        raise TypeError(f"{field} has no column")
    return field.column


@functools.cache
def _shape(model: type[Model], vendor: str) -> tuple[str, list[str], list[tuple[int, list[Any]]]]:
    """The model's column list (qualified by its table), attribute names, and the value
    converters the ORM would apply, per column (e.g. decimals and datetimes on SQLite)."""
    connection = connections[DEFAULT_DB_ALIAS]
    quote = connection.ops.quote_name
    table = model._meta.db_table
    fields = model._meta.concrete_fields
    columns = ", ".join(f"{quote(table)}.{quote(column_of(f))}" for f in fields)
    converters: list[tuple[int, list[Any]]] = []
    for index, field in enumerate(fields):
        column = field.get_col(table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((index, [(fn, column) for fn in found]))
    return columns, [f.attname for f in fields], converters


def columns(model: type[Model]) -> str:
    """`"table"."column", …` for every concrete field of `model`, in field order."""
    return _shape(model, connections[DEFAULT_DB_ALIAS].vendor)[0]


def instances(model: type[M], rows: Sequence[Sequence[Any]]) -> list[M]:
    """Model instances from rows whose leading values are `columns(model)`."""
    connection = connections[DEFAULT_DB_ALIAS]
    _, names, converters = _shape(model, connection.vendor)
    width = len(names)
    found: list[M] = []
    for row in rows:
        values = list(row[:width])
        for index, steps in converters:
            for convert, expression in steps:
                values[index] = convert(values[index], expression, connection)
        found.append(model.from_db(DEFAULT_DB_ALIAS, names, values))
    return found


def fetch(model: type[M], sql: str, params: Sequence[Any]) -> list[M]:
    """Run `sql` (which selects `columns(model)` first) and return model instances."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        return instances(model, cursor.fetchall())


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
        selected.append(quote(column_of(field)))
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((index, [(fn, column) for fn in found]))
    sql = (
        f"SELECT {', '.join(selected)} FROM {quote(table)} "
        f"WHERE {quote('plan_id')} = %s ORDER BY {quote('position')}"
    )
    return sql, converters


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
