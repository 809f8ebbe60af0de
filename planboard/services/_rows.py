"""Row locks and writes of the hot path, as SQL built once per process from the models.

The same reasoning as `planboard.selectors.rows`: the ORM compiles every statement anew
(about 0.4 ms each here), and a plan change runs a few. These helpers generate their SQL from
the models' metadata and prepare values with each field's own `pre_save` and
`get_db_prep_save`, so they store exactly what `Model.save()` would; they skip Django's
save signals, which no plan-domain model uses (tests/planboard/test_rows.py checks both).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

from planboard.models import ChatSession, Plan
from planboard.selectors import rows


def _connection() -> BaseDatabaseWrapper:
    return connections[DEFAULT_DB_ALIAS]


@functools.cache
def _lock_plan_sql(vendor: str) -> str:
    """The plan's session row, then the plan row, locked in one statement.

    The session is locked by the sub-select in WHERE, which runs before the statement's own
    row lock takes the plan: the one lock order (session, then plan) in one round trip.
    """
    quote = _connection().ops.quote_name
    plan_table = quote(Plan._meta.db_table)
    session_table = quote(ChatSession._meta.db_table)
    username, join = rows.owner_username_join(Plan._meta.db_table)
    locking = vendor == "postgresql"
    lock_session = " FOR NO KEY UPDATE" if locking else ""
    lock_plan = f" FOR NO KEY UPDATE OF {plan_table}" if locking else ""
    return (
        f"SELECT {rows.columns(Plan)}, {username} FROM {plan_table} {join} "
        f"WHERE {plan_table}.{quote('id')} = %s AND ({plan_table}.{quote('session_id')} IS NULL "
        f"OR EXISTS (SELECT 1 FROM {session_table} WHERE {session_table}.{quote('id')} = "
        f"{plan_table}.{quote('session_id')}{lock_session}))"
        f"{lock_plan}"
    )


def lock_plan(plan_id: int) -> Plan | None:
    """Lock the plan (and first its session); None when it does not exist."""
    return rows.fetch_owned(Plan, _lock_plan_sql(_connection().vendor), [plan_id])


def lock_session(session_id: int) -> ChatSession | None:
    """Lock the chat session row; None when it does not exist."""
    sql = rows.owned_row_sql(ChatSession, _connection().vendor, locked=True)
    return rows.fetch_owned(ChatSession, sql, [session_id])


def _fields(model: type[Model], names: Sequence[str]) -> list[Field[Any, Any]]:
    """The named fields plus the model's `auto_now` fields (as a whole-row save would)."""
    chosen = [rows.field_of(model, name) for name in names]
    chosen += [
        f
        for f in model._meta.concrete_fields
        if getattr(f, "auto_now", False) and f not in chosen  # e.g. updated_at
    ]
    return chosen


@functools.cache
def _update_sql(model: type[Model], columns: tuple[str, ...]) -> str:
    quote = _connection().ops.quote_name
    assignments = ", ".join(f"{quote(column)} = %s" for column in columns)
    pk = quote(rows.column_of(model._meta.pk))
    return f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {pk} = %s"


def update(obj: Model, names: Sequence[str]) -> None:
    """`obj.save(update_fields=names)` (plus `auto_now` fields), as one prepared UPDATE."""
    connection = _connection()
    fields = _fields(type(obj), names)
    values = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields]
    sql = _update_sql(type(obj), tuple(rows.column_of(f) for f in fields))
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, obj.pk])


@functools.cache
def _insert_sql(model: type[Model], returning: bool) -> tuple[str, tuple[Field[Any, Any], ...]]:
    quote = _connection().ops.quote_name
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key)
    names = ", ".join(quote(rows.column_of(f)) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    tail = f" RETURNING {quote(rows.column_of(model._meta.pk))}" if returning else ""
    return f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES ({marks}){tail}", fields


def insert(obj: Model) -> None:
    """`obj.save()` of a new row with a database-generated primary key, as one INSERT."""
    connection = _connection()
    returning = connection.features.can_return_columns_from_insert
    sql, fields = _insert_sql(type(obj), returning)
    values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        obj.pk = cursor.fetchone()[0] if returning else cursor.lastrowid
    obj._state.adding = False
    obj._state.db = DEFAULT_DB_ALIAS


@functools.cache
def _add_sql(model: type[Model], columns: tuple[str, ...], extra: tuple[str, ...]) -> str:
    quote = _connection().ops.quote_name
    assignments = ", ".join(f"{quote(c)} = {quote(c)} + %s" for c in columns)
    where = " AND ".join(f"{quote(c)} = %s" for c in (rows.column_of(model._meta.pk), *extra))
    return f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {where}"


def add(
    model: type[Model], pk: int, amounts: dict[str, Any], *, where: dict[str, Any] | None = None
) -> None:
    """Add `amounts` ({field: number}) to one row's counters, atomically in the database
    (`F(field) + amount`), optionally only if it also matches `where` ({field: value})."""
    connection = _connection()
    fields = [rows.field_of(model, name) for name in amounts]
    conditions = [rows.field_of(model, name) for name in (where or {})]
    values = [
        f.get_db_prep_save(amount, connection)
        for f, amount in zip(fields, amounts.values(), strict=True)
    ]
    values.append(pk)
    values += [
        f.get_db_prep_value(v, connection)
        for f, v in zip(conditions, (where or {}).values(), strict=True)
    ]
    sql = _add_sql(
        model,
        tuple(rows.column_of(f) for f in fields),
        tuple(rows.column_of(f) for f in conditions),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
