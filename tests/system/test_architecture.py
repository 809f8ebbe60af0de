"""The architecture's rules, checked on the source (docs/ARCHITECTURE.md).

Ruff's banned-import rule (TID251, see pyproject.toml and planboard/ruff.toml) already fails
`make test` on a wrong import; these tests check the same import rules independently of the
linter's configuration, and the one rule a linter cannot: nothing but the services writes
plan-domain rows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("planboard", "agents")
# The plan domain: only planboard/services may create, change or delete these rows.
PLAN_MODELS = {
    "ChatSession",
    "Plan",
    "SubTask",
    "PlanEvent",
    "Message",
    "AgentRun",
    "AgentProfile",
    "WorkspaceFile",
}
QUERYSET_WRITES = {
    "create",
    "update",
    "delete",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
# Modules outside the services that call .save()/.delete() on instances, and why that is
# not a plan-domain write.
INSTANCE_WRITES_ALLOWED = {
    "agents/steps.py": "AgentStep rows: the agent's own step records",
    "agents/loop.py": "AgentStep rows: the agent's own step records",
    "planboard/management/commands/ensure_demo_user.py": "the demo login's user row",
    "planboard/streams.py": "cache.delete(): the partial answer kept in the cache",
}


def source_files() -> Iterator[tuple[str, ast.Module]]:
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative:
                continue
            yield relative, ast.parse(path.read_text(encoding="utf-8"), filename=relative)


def imported_modules(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def top(module: str) -> str:
    return module.split(".")[0]


def test_import_rules() -> None:
    broken: list[str] = []
    for path, tree in source_files():
        for module in imported_modules(tree):
            if path.startswith("planboard/") and top(module) == "agents":
                broken.append(f"{path}: planboard must not import {module}")
            if top(module) == "litellm" and path != "agents/llm.py":
                broken.append(f"{path}: only agents/llm.py imports litellm")
            if top(module) == "mcp" and path != "agents/mcp_client.py":
                broken.append(f"{path}: only agents/mcp_client.py imports mcp")
    assert broken == []


def chain_root(node: ast.expr) -> str | None:
    """`Plan` for `Plan.objects.filter(...).update`, following attributes and calls."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def plan_domain_writes(path: str, tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        through_manager = "objects" in ast.unparse(node.func.value).split(".")
        if method in QUERYSET_WRITES and through_manager:
            if chain_root(node.func.value) in PLAN_MODELS:
                yield f"{path}:{node.lineno}: {ast.unparse(node.func)}"
        elif method in ("save", "delete") and not through_manager:
            if path not in INSTANCE_WRITES_ALLOWED:
                yield f"{path}:{node.lineno}: {ast.unparse(node.func)}()"


def test_only_the_services_write_plan_domain_rows() -> None:
    writes = [
        write
        for path, tree in source_files()
        if not path.startswith("planboard/services/")
        for write in plan_domain_writes(path, tree)
    ]
    assert writes == []


def test_the_write_check_catches_a_write() -> None:
    """The check above would fail on the writes it is meant to catch."""
    sample = ast.parse(
        "Plan.objects.filter(pk=1).update(name='x')\n"
        "SubTask.objects.create(plan=p)\n"
        "subtask.save()\n"
        "AgentStep.objects.filter(pk=1).update(status='x')\n"
    )
    found = list(plan_domain_writes("planboard/api/views.py", sample))
    assert [line.split(": ", 1)[1] for line in found] == [
        "Plan.objects.filter(pk=1).update",
        "SubTask.objects.create",
        "subtask.save()",
    ]


# A path in backticks that starts at one of the project's top-level folders.
NAMED_PATH = re.compile(
    r"`((?:planboard|agents|frontend|tests|requirements|bench|templates|docs)/[^`*<>{} ]*)`"
)


def test_every_path_the_architecture_page_names_exists() -> None:
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = {path.rstrip("/") for path in NAMED_PATH.findall(page)}
    assert len(named) > 20
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert missing == []
