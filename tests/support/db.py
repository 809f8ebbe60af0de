"""The database connection as tests see it: the one test module that touches
`django.db.connection(s)` (ruff's TID251 bans them elsewhere; in the application only
planboard/sql.py may). Tests count statements, close a thread's own connection, check whether
a transaction is open, inject failures and open a second connection through these.

Statements are counted as Django's connection sees them: BEGIN, COMMIT and savepoints
included, the same on SQLite and PostgreSQL (the pinned counts in tests/agents/
test_query_counts.py and tests/planboard/test_api_plans.py are in these units).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test.utils import CaptureQueriesContext


def _default() -> BaseDatabaseWrapper:
    return connections[DEFAULT_DB_ALIAS]


class Statements(list[str]):
    """The SQL of the statements run inside a `statements()` block, in order."""

    def per(self, units: int) -> float:
        """Statements per unit of work (a call, a step) the block did `units` of."""
        return len(self) / units

    def selecting(self, fragment: str) -> list[str]:
        return [sql for sql in self if fragment in sql]


@contextmanager
def statements() -> Iterator[Statements]:
    """Collects the statements run inside the block (filled when the block ends)."""
    found = Statements()
    with CaptureQueriesContext(_default()) as captured:
        yield found
    found.extend(query["sql"] for query in captured.captured_queries)


def count_statements(work: Callable[[], Any]) -> int:
    """How many statements `work()` runs."""
    with statements() as found:
        work()
    return len(found)


def per_extra_unit(fewer: int, more: int, extra_units: int) -> float:
    """The statements each unit of work adds: the counts of two runs of the same work that
    differ by `extra_units` units (a run's start and end cancel out)."""
    return (more - fewer) / extra_units


def vendor() -> str:
    return _default().vendor


def features() -> Any:
    """The default connection's feature flags (tests switch one off to take the other path)."""
    return _default().features


def settings_dict() -> dict[str, Any]:
    return dict(_default().settings_dict)


def in_transaction() -> bool:
    return bool(_default().in_atomic_block)


def transaction_probe() -> Callable[[], bool]:
    """Whether this thread's connection is inside a transaction, asked from any thread (the
    run's event loop, while this thread does the run's database work)."""
    connection = _default()
    return lambda: bool(connection.in_atomic_block)


def close_thread_connections() -> None:
    """A thread that used the database closes its own connections when it ends (Django opens
    one per thread; they would stay open until garbage-collected)."""
    connections.close_all()


def execute_wrapper(wrapper: Callable[..., Any]) -> Any:
    """Django's `connection.execute_wrapper` on the default connection (faults, timing)."""
    return _default().execute_wrapper(wrapper)


def second_connection() -> BaseDatabaseWrapper:
    """A new connection to the default database, apart from this thread's (close it after)."""
    return connections.create_connection(DEFAULT_DB_ALIAS)


def fetch_one(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """One row of `sql` on this thread's connection, as the database holds it (no field
    converts it: e.g. encrypted columns stay ciphertext)."""
    with _default().cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None
