"""Model instances from the plain rows `planboard.sql` reads, built as the ORM's `raw()` builds
them (each field's value converters, then `Model.from_db`) without its 0.1 ms of resolving the
columns on every query. No SQL and no connection here: the caller passes the database it read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

from planboard.models import ChatSession, Plan

M = TypeVar("M", bound=Model)
Owned = TypeVar("Owned", ChatSession, Plan)
# Per column: its field's attribute name and the (converter, column) pairs to apply in order.
Shape = list[tuple[str, list[tuple[Callable[..., Any], Any]]]]
_shapes: dict[tuple[type[Model], str, str], Shape] = {}


def load(db: BaseDatabaseWrapper, model: type[M], columns: str, values: Sequence[Any]) -> M:
    """`model` from one row's `values` of `columns` ("[alias.]column, ..." of its fields)."""
    converted, shape = list(values), _shape(db, model, columns)
    for index, (_, steps) in enumerate(shape):
        for convert, col in steps:
            converted[index] = convert(converted[index], col, db)
    return model.from_db(DEFAULT_DB_ALIAS, [name for name, _ in shape], converted)


def with_owner(obj: Owned, username: str) -> Owned:
    """`obj.owner` becomes a user with id and username (all a snapshot shows): no query."""
    owner = User.from_db(DEFAULT_DB_ALIAS, ["id", "username"], [obj.owner_id, username])
    type(obj).owner.field.set_cached_value(obj, owner)
    return obj


def _shape(db: BaseDatabaseWrapper, model: type[Model], columns: str) -> Shape:
    """The columns' fields and converters, worked out once per model, column list and vendor."""
    key = (model, columns, db.vendor)
    if key not in _shapes:
        fields = {field.attname: field for field in model._meta.concrete_fields}
        names = [column.strip().split(".")[-1] for column in columns.split(",")]
        cols = [fields[name].get_col(model._meta.db_table) for name in names]
        steps = [db.ops.get_db_converters(col) + col.get_db_converters(db) for col in cols]
        _shapes[key] = [
            (name, [(step, col) for step in found])
            for name, col, found in zip(names, cols, steps, strict=True)
        ]
    return _shapes[key]
