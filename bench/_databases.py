"""The benchmarks' databases (a temporary SQLite file, the PostgreSQL database `bench`, a Redis
db) and Django set up in the benchmark's own process."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from _config import PG_ADMIN_URL, PG_DB_NAME, REDIS_BENCH_URL, ROOT


def postgres_url(db_name: str = PG_DB_NAME) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + db_name


def recreate_postgres(db_name: str = PG_DB_NAME) -> str:
    """Drop and create the benchmark database; returns its URL."""
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db_name}"')
    return postgres_url(db_name)


def sqlite_url() -> str:
    path = Path(tempfile.mkdtemp(prefix="planboard-bench-")) / "bench.sqlite3"
    return f"sqlite:///{path}"


def database_url(backend: str) -> str:
    if backend == "sqlite":
        return sqlite_url()
    if backend == "postgres":
        return recreate_postgres()
    raise SystemExit(f"unknown backend {backend!r}: use sqlite or postgres")


def base_env(**overrides: str) -> dict[str, str]:
    """The environment of a benchmark process: quiet, production-like, no real LLM."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "planboard.settings",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "DJANGO_LOG_LEVEL": "WARNING",
            # Production settings: with DEBUG on, Django would also log every query.
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "bench-only-secret-key-not-used-anywhere-else",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(overrides)
    return env


def setup_django(db_url: str, *, migrate: bool = True, **env: str) -> None:
    """Point Django at `db_url`, set it up, and create the tables."""
    os.environ.update(base_env(DATABASE_URL=db_url, **env))
    if "REDIS_URL" not in env:
        # In-process benchmarks measure the database path only; no broker, no channel layer.
        os.environ.pop("REDIS_URL", None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def flush_redis(url: str = REDIS_BENCH_URL) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()
