#!/usr/bin/env bash
# The benchmark-only environment: AgentScope (for bench/tool_overhead.py) lives in its own
# venv so its dependencies never touch the app's .venv. AgentScope 2.x dropped PlanNotebook,
# so the last 1.0 release is pinned; greenlet and tqdm are imported but not declared by it.
# AgentScope 1.0.21 imports a name that mcp 2.x removed, so mcp stays below 2 here.
set -euo pipefail
cd "$(dirname "$0")/.."
test -x .venv-bench/bin/python || python3.11 -m venv .venv-bench
.venv-bench/bin/pip install -q --upgrade pip
.venv-bench/bin/pip install -q "agentscope==1.0.21" "mcp<2" greenlet tqdm
.venv-bench/bin/python -c "from agentscope.plan import PlanNotebook; print('AgentScope PlanNotebook ready')"
