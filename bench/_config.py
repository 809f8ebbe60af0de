"""Where the benchmarks find this checkout, its virtualenvs, the doc and the servers.

The server addresses are overridable from the environment, so the benchmarks can run against
other servers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "PERFORMANCE.md"
RESULTS_DIR = ROOT / "bench" / "results"
# A worktree without its own .venv runs with the interpreter's (the one running this script).
VENV_DIR = ROOT / ".venv" if (ROOT / ".venv").exists() else Path(sys.prefix)
VENV_PYTHON = VENV_DIR / "bin" / "python"
BENCH_VENV_PYTHON = ROOT / ".venv-bench" / "bin" / "python"

PG_ADMIN_URL = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
PG_DB_NAME = os.environ.get("BENCH_PG_DB", "bench")
REDIS_BENCH_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
