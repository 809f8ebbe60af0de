"""The row locks every plan change takes, as SQL built once per process from the models
(`planboard.prepared` says why). Writes use `planboard.prepared`'s insert/update/add.
"""

from __future__ import annotations

import functools

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from planboard import prepared
from planboard.models import ChatSession, Plan, SubTask
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
        f"SELECT {prepared.columns(Plan)}, {username} FROM {plan_table} {join} "
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


@functools.cache
def _shift_sql(vendor: str) -> str:
    quote = _connection().ops.quote_name
    table = quote(SubTask._meta.db_table)
    position = quote("position")
    return (
        f"UPDATE {table} SET {position} = {position} + %s "
        f"WHERE {quote('plan_id')} = %s AND {position} >= %s"
    )


def shift_positions(plan_id: int, *, start: int, by: int) -> None:
    """Move the plan's subtasks at `start` and after by `by` places (one prepared UPDATE)."""
    with _connection().cursor() as cursor:
        cursor.execute(_shift_sql(_connection().vendor), [by, plan_id, start])
