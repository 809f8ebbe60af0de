"""Shared plumbing of the benchmarks, in one import: `import _common as common`.

Every benchmark is one script, `.venv/bin/python bench/<name>.py`. Each creates its own
databases (a temporary SQLite file, the PostgreSQL database `bench`, Redis db 9), appends its
run's rows to bench/results/<name>.json (`record_run`: every run is kept, with the machine,
date, command and commit) and replaces its own section of docs/PERFORMANCE.md, between
`<!-- bench:<name>:start/end -->` markers, with that run's figures only (`write_section`).

The helpers live in the modules beside this one, by what they touch: `_config` (paths and
servers), `_machine` (a run's facts), `_results` (statistics, bench/results), `_doc_sections`
(docs/PERFORMANCE.md), `_databases` (databases and Django), `_processes` (child processes and
reference checkouts).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The helpers import each other as siblings, also when this is imported as `bench._common`.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _config import (
    BENCH_VENV_PYTHON,
    PERFORMANCE_MD,
    PG_ADMIN_URL,
    PG_DB_NAME,
    REDIS_BENCH_URL,
    RESULTS_DIR,
    ROOT,
    VENV_DIR,
    VENV_PYTHON,
)
from _databases import (
    base_env,
    database_url,
    flush_redis,
    postgres_url,
    recreate_postgres,
    setup_django,
    sqlite_url,
)
from _doc_sections import (
    SECTION_ORDER,
    facts_lines,
    fmt_ms,
    fmt_ratio,
    fmt_us,
    table,
    wrapped,
    write_section,
)
from _machine import (
    OWN_OUTPUT,
    command_line,
    git_commit,
    machine_info,
    machine_summary,
    run_facts,
    service_versions,
    short_cpu,
)
from _processes import (
    PACED_MODEL,
    Process,
    collectstatic,
    free_port,
    paced_stats,
    reference_checkout,
    run_json,
    server_env,
    short_revision,
    start_daphne,
    start_paced_model,
    wait_http,
)
from _results import median, percentile, record_run

__all__ = [
    "BENCH_VENV_PYTHON",
    "OWN_OUTPUT",
    "PACED_MODEL",
    "PERFORMANCE_MD",
    "PG_ADMIN_URL",
    "PG_DB_NAME",
    "REDIS_BENCH_URL",
    "RESULTS_DIR",
    "ROOT",
    "SECTION_ORDER",
    "VENV_DIR",
    "VENV_PYTHON",
    "Process",
    "base_env",
    "collectstatic",
    "command_line",
    "database_url",
    "facts_lines",
    "flush_redis",
    "fmt_ms",
    "fmt_ratio",
    "fmt_us",
    "free_port",
    "git_commit",
    "machine_info",
    "machine_summary",
    "median",
    "no_dispatch",
    "paced_stats",
    "percentile",
    "postgres_url",
    "record_run",
    "recreate_postgres",
    "reference_checkout",
    "run_facts",
    "run_json",
    "server_env",
    "service_versions",
    "setup_django",
    "short_cpu",
    "short_revision",
    "sqlite_url",
    "start_daphne",
    "start_paced_model",
    "table",
    "wait_http",
    "wrapped",
    "write_section",
]


# Defined here, not re-exported: settings name it by this dotted path ("_common.no_dispatch").
def no_dispatch(run_id: int, session_id: int | None = None) -> None:
    """PLANBOARD_RUN_DISPATCHER for benchmarks that create runs but never execute them."""
