"""Statements built once per process from the models' metadata, for the hot paths.

Django compiles a queryset to SQL on every execution; on our 2-core machines that costs about
0.4 ms per statement, more than a local database round trip, and a plan tool call or an agent
step runs a handful (docs/PERFORMANCE.md). These helpers generate the SQL from the models
themselves (columns, converters, each field's `pre_save` and `get_db_prep_save`), so a read
gives the instances the ORM would and a write stores what `Model.save()` would — a new model
field needs no change here. They skip Django's save signals, which none of our models use
(tests/planboard/test_rows.py checks both). Everything off the hot paths uses the ORM.

Writes of plan-domain rows still belong to `planboard.services` (the architecture test checks
the ORM calls; these helpers are called only there and for the agent's own step records).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

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
def _shape(
    model: type[Model], vendor: str, names: tuple[str, ...] | None = None
) -> tuple[str, list[str], list[tuple[int, list[Any]]]]:
    """The model's column list (qualified by its table), attribute names, and the value
    converters the ORM would apply, per column (e.g. decimals and datetimes on SQLite); of
    the fields `names` only when given (the others are deferred on the instances)."""
    connection = connections[DEFAULT_DB_ALIAS]
    quote = connection.ops.quote_name
    table = model._meta.db_table
    fields = model._meta.concrete_fields if names is None else [field_of(model, n) for n in names]
    columns = ", ".join(f"{quote(table)}.{quote(column_of(f))}" for f in fields)
    converters: list[tuple[int, list[Any]]] = []
    for index, field in enumerate(fields):
        column = field.get_col(table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((index, [(fn, column) for fn in found]))
    return columns, [f.attname for f in fields], converters


def columns(model: type[Model], names: tuple[str, ...] | None = None) -> str:
    """`"table"."column", …` for every concrete field of `model` in field order, or for the
    fields `names`."""
    return _shape(model, connections[DEFAULT_DB_ALIAS].vendor, names)[0]


def instances(
    model: type[M], rows: Sequence[Sequence[Any]], fields: tuple[str, ...] | None = None
) -> list[M]:
    """Model instances from rows whose leading values are `columns(model, fields)`."""
    connection = connections[DEFAULT_DB_ALIAS]
    _, names, converters = _shape(model, connection.vendor, fields)
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


# --- writes -----------------------------------------------------------------------------------


def _connection() -> BaseDatabaseWrapper:
    return connections[DEFAULT_DB_ALIAS]


def _fields(model: type[Model], names: Sequence[str]) -> list[Field[Any, Any]]:
    """The named fields plus the model's `auto_now` fields (as a whole-row save would)."""
    chosen = [field_of(model, name) for name in names]
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
    pk = quote(column_of(model._meta.pk))
    return f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {pk} = %s"


def update(obj: Model, names: Sequence[str]) -> None:
    """`obj.save(update_fields=names)` (plus `auto_now` fields), as one prepared UPDATE."""
    connection = _connection()
    fields = _fields(type(obj), names)
    values = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields]
    sql = _update_sql(type(obj), tuple(column_of(f) for f in fields))
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, obj.pk])


@functools.cache
def _insert_sql(
    model: type[Model], returning: bool, unless_duplicate: bool = False
) -> tuple[str, tuple[Field[Any, Any], ...]]:
    quote = _connection().ops.quote_name
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key)
    names = ", ".join(quote(column_of(f)) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    skip = " ON CONFLICT DO NOTHING" if unless_duplicate else ""
    tail = f" RETURNING {quote(column_of(model._meta.pk))}" if returning else ""
    table = quote(model._meta.db_table)
    return f"INSERT INTO {table} ({names}) VALUES ({marks}){skip}{tail}", fields


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


def can_insert_unless_duplicate() -> bool:
    """Whether `insert_unless_duplicate` works on this database (PostgreSQL, SQLite 3.35+)."""
    return bool(_connection().features.can_return_columns_from_insert)


def insert_unless_duplicate(obj: Model) -> bool:
    """Insert `obj` unless a unique constraint already holds an equal row; returns whether it
    was inserted. One statement (`ON CONFLICT DO NOTHING`): unlike catching the
    IntegrityError, it needs no savepoint to keep the caller's transaction usable."""
    connection = _connection()
    sql, fields = _insert_sql(type(obj), True, unless_duplicate=True)
    values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return False
    obj.pk = row[0]
    obj._state.adding = False
    obj._state.db = DEFAULT_DB_ALIAS
    return True


@functools.cache
def _add_sql(
    model: type[Model],
    columns: tuple[str, ...],
    extra: tuple[str, ...],
    returning: tuple[str, ...] = (),
) -> str:
    quote = _connection().ops.quote_name
    assignments = ", ".join(f"{quote(c)} = {quote(c)} + %s" for c in columns)
    where = " AND ".join(f"{quote(c)} = %s" for c in (column_of(model._meta.pk), *extra))
    tail = f" RETURNING {', '.join(quote(c) for c in returning)}" if returning else ""
    return f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {where}{tail}"


def add(
    model: type[Model],
    pk: int,
    amounts: dict[str, Any],
    *,
    where: dict[str, Any] | None = None,
    returning: Sequence[str] = (),
) -> tuple[Any, ...] | None:
    """Add `amounts` ({field: number}) to one row's counters, atomically in the database
    (`F(field) + amount`), optionally only if it also matches `where` ({field: value}).

    With `returning` (field names) the row's values of those fields after the update come
    back in the same statement (None when no row matched); PostgreSQL and SQLite 3.35+."""
    connection = _connection()
    fields = [field_of(model, name) for name in amounts]
    conditions = [field_of(model, name) for name in (where or {})]
    values = [
        f.get_db_prep_save(amount, connection)
        for f, amount in zip(fields, amounts.values(), strict=True)
    ]
    values.append(pk)
    values += [
        f.get_db_prep_value(v, connection)
        for f, v in zip(conditions, (where or {}).values(), strict=True)
    ]
    shown = [field_of(model, name) for name in returning]
    # Without RETURNING (SQLite before 3.35) the values are read after the update.
    inline = connection.features.can_return_columns_from_insert
    sql = _add_sql(
        model,
        tuple(column_of(f) for f in fields),
        tuple(column_of(f) for f in conditions),
        tuple(column_of(f) for f in shown) if inline else (),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        if not shown:
            return None
        if not inline:  # no RETURNING: the ORM reads them after, already converted
            if not cursor.rowcount:
                return None
            found = model._default_manager.filter(pk=pk).values_list(*returning).first()
            return tuple(found) if found is not None else None
        row = cursor.fetchone()
    return converted(row, shown) if row is not None else None


def converted(row: Sequence[Any], fields: Sequence[Field[Any, Any] | None]) -> tuple[Any, ...]:
    """The row's values as the ORM gives them (each through its field's converters, e.g.
    decimals on SQLite); None among `fields` leaves that value as it is, as do NULLs."""
    connection = _connection()
    values = list(row)
    for index, field in enumerate(fields):
        if field is None or values[index] is None:
            continue
        column = field.get_col(field.model._meta.db_table)
        for convert in connection.ops.get_db_converters(column) + column.get_db_converters(
            connection
        ):
            values[index] = convert(values[index], column, connection)
    return tuple(values)
