"""The architecture's rules, checked on the source (docs/ARCHITECTURE.md).

Ruff's banned-import rule (TID251, see pyproject.toml and planboard/ruff.toml) already fails
`make test` on a wrong import; these tests check the same import rules independently of the
linter's configuration, and the rules a linter cannot: nothing but the services writes
plan-domain rows (through the ORM or planboard/sql.py's statements), nothing but
agents/steps.py writes step records, and `agents` uses only the public names of the selectors
and services.
"""

from __future__ import annotations

import ast
import importlib
import inspect
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
    "PlanFork",
    "Message",
    "AgentRun",
    "AgentProfile",
    "WorkspaceFile",
    "Decision",
    "InboxSnooze",
    "NotificationSettings",
    "Notification",
    "ActionLink",
    "PlanTemplate",
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
    "planboard/management/commands/ensure_demo_user.py": "the demo login's user row",
    "planboard/streams.py": "cache.delete(): the partial answer kept in the cache",
}
# The one module that touches a database connection, and the one that writes step records.
CONNECTION_MODULE = "planboard/sql.py"
STEP_RECORDS_MODULE = "agents/steps.py"


def sql_writes() -> set[str]:
    """planboard/sql.py's functions that lock or write: those whose statement (a module
    constant) is an INSERT, UPDATE or DELETE or takes a row lock, and those that call one."""
    from planboard import sql

    statements = {
        name
        for name, value in vars(sql).items()
        if isinstance(value, str)
        and (re.match(r"\s*(INSERT|UPDATE|DELETE)\b", value) or "FOR NO KEY UPDATE" in value)
    }
    tree = ast.parse((ROOT / CONNECTION_MODULE).read_text(encoding="utf-8"))
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    writers: set[str] = set()
    while True:  # until no function is found to reach a writing statement or writer
        found = writers | {
            node.name
            for node in functions
            if any(isinstance(n, ast.Name) and n.id in statements | writers for n in ast.walk(node))
        }
        if found == writers:
            return {name for name in writers if not name.startswith("_")}
        writers = found


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
            if top(module) == "litellm" and not path.startswith("agents/llm/"):
                broken.append(f"{path}: only agents/llm/ imports litellm")
            if top(module) == "mcp" and not path.startswith("agents/mcp/"):
                broken.append(f"{path}: only agents/mcp/ imports mcp")
    assert broken == []


def connection_uses(path: str, tree: ast.Module) -> Iterator[str]:
    """`django.db.connection(s)` imported or reached as an attribute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "django.db":
            for alias in node.names:
                if alias.name in ("connection", "connections"):
                    yield f"{path}:{node.lineno}: from django.db import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("django.db.connection", "django.db.connections"):
                    yield f"{path}:{node.lineno}: import {alias.name}"
        elif isinstance(node, ast.Attribute) and node.attr in ("connection", "connections"):
            if ast.unparse(node.value) in ("django.db", "db"):
                yield f"{path}:{node.lineno}: {ast.unparse(node)}"


def test_only_planboard_sql_touches_a_database_connection() -> None:
    found = [
        use
        for path, tree in source_files()
        if path != CONNECTION_MODULE
        for use in connection_uses(path, tree)
    ]
    assert found == []


def test_the_connection_check_catches_a_use() -> None:
    sample = ast.parse(
        "from django.db import connection, transaction\n"
        "import django.db.connections\n"
        "from django import db\n"
        "db.connections['default'].cursor()\n"
    )
    assert [use.split(": ", 1)[1] for use in connection_uses("agents/x.py", sample)] == [
        "from django.db import connection",
        "import django.db.connections",
        "db.connections",
    ]


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
    writes = sql_writes()
    from_sql = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "planboard.sql"
        for alias in node.names
        if alias.name in writes
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in from_sql:  # `from planboard.sql import plan_update`
                yield f"{path}:{node.lineno}: {node.func.id}()"
            continue
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        if ast.unparse(node.func.value) in ("sql", "planboard.sql"):
            if method in writes:
                yield f"{path}:{node.lineno}: {ast.unparse(node.func)}()"
            continue
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
    """The check above would fail on the writes it is meant to catch: the ORM's, and
    planboard/sql.py's statements that write or lock (reads are anyone's)."""
    sample = ast.parse(
        "from planboard.sql import message_insert, subtasks\n"
        "Plan.objects.filter(pk=1).update(name='x')\n"
        "SubTask.objects.create(plan=p)\n"
        "subtask.save()\n"
        "AgentStep.objects.filter(pk=1).update(status='x')\n"
        "sql.plan_update(plan)\n"
        "sql.lock_plan(1)\n"
        "sql.session_with_plan(1)\n"
        "message_insert(message)\n"
        "subtasks(1)\n"
    )
    found = list(plan_domain_writes("planboard/api/views.py", sample))
    assert sorted(line.split(": ", 1)[1] for line in found) == [
        "Plan.objects.filter(pk=1).update",
        "SubTask.objects.create",
        "message_insert()",
        "sql.lock_plan()",
        "sql.plan_update()",
        "subtask.save()",
    ]
    assert sql_writes() == {
        "lock_plan", "lock_plan_and_subtasks", "lock_session", "plan_update", "subtask_update",
        "message_insert", "event_insert", "run_count_step", "lock_user", "session_set_title",
        "run_insert",
    }  # fmt: skip


def step_record_writes(path: str, tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in QUERYSET_WRITES and chain_root(node.func.value) == "AgentStep":
                yield f"{path}:{node.lineno}: {ast.unparse(node.func)}"


def test_only_agents_steps_writes_step_records() -> None:
    """`AgentStep` rows are written in one module (their instances' `.save()` too: the
    instance-write check above allows it there only)."""
    found = [
        write
        for path, tree in source_files()
        if path != STEP_RECORDS_MODULE
        for write in step_record_writes(path, tree)
    ]
    assert found == []
    sample = ast.parse("AgentStep.objects.filter(run=run).update(status='x')\n")
    assert len(list(step_record_writes("agents/loop.py", sample))) == 1


def layer_api(layer: str) -> set[str]:
    """The public functions (and constants, classes) a layer package exports: its `__all__`
    minus modules."""
    package = importlib.import_module(f"planboard.{layer}")
    return {name for name in package.__all__ if not inspect.ismodule(getattr(package, name, None))}


def private_uses(path: str, tree: ast.Module) -> Iterator[str]:
    """What `agents` must not use of planboard.selectors / planboard.services: a `_`-prefixed
    module or name, or a name the package does not export as a function (e.g. a module of
    helpers); and planboard.sql's statements."""
    api = {layer: layer_api(layer) for layer in ("selectors", "services")}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [alias.name for alias in node.names]
            shown = f"{path}:{node.lineno}: from {node.module} import {', '.join(names)}"
            parts = node.module.split(".")
            if parts[:2] in (["planboard", "selectors"], ["planboard", "services"]):
                if len(parts) == 2 and any(name not in api[parts[1]] for name in names):
                    yield shown
                elif any(part.startswith("_") for part in parts[2:] + names):
                    yield shown
            elif node.module == "planboard.sql" and names != ["close_thread_connection"]:
                yield shown
            elif node.module == "planboard" and "sql" in names:
                yield f"{path}:{node.lineno}: from planboard import sql"
        elif isinstance(node, ast.Attribute):
            layer = ast.unparse(node.value).split(".")[-1]
            if layer in api and node.attr not in api[layer]:
                yield f"{path}:{node.lineno}: {ast.unparse(node)}"


def test_agents_use_only_public_selectors_and_services() -> None:
    """The agent runtime reaches plan data through the layers' public functions only (the
    connection helper of planboard.sql excepted: the lease heartbeat's thread closes its own)."""
    found = [
        use
        for path, tree in source_files()
        if path.startswith("agents/")
        for use in private_uses(path, tree)
    ]
    assert found == []


def test_the_public_names_check_catches_a_private_use() -> None:
    sample = ast.parse(
        "from planboard.services._core import _lock_plan\n"
        "from planboard.services import _core\n"
        "from planboard.selectors.toolsets import _flags\n"
        "from planboard.services.toolsets import repeatable\n"
        "from planboard.services import Actor, message_post\n"
        "from planboard import sql, selectors\n"
        "from planboard.sql import close_thread_connection\n"
        "services._record(plan)\n"
        "planboard.selectors.plans.plan_snapshot(plan_id=1)\n"
        "selectors.plan_snapshot(plan_id=1)\n"
    )
    assert [use.split(": ", 1)[1] for use in private_uses("agents/x.py", sample)] == [
        "from planboard.services._core import _lock_plan",
        "from planboard.services import _core",
        "from planboard.selectors.toolsets import _flags",
        "from planboard import sql",
        "services._record",
        "planboard.selectors.plans",
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


# --- typed shapes: planboard/shapes.py and frontend/js/types.js ---------------------------
# mypy (planboard/, agents/) and tsc (frontend/js/) check every use of the shapes on `make
# test`; these tests keep the two definitions of each shape the same, which neither checker
# can see.

SHAPES = ROOT / "planboard" / "shapes.py"
JS_TYPES = ROOT / "frontend" / "js" / "types.js"
# `@typedef {object} Name` followed by its `@property {...} [name]` lines, or
# `@typedef {Base & {key: T, ...}} Name`.
JS_TYPEDEF = re.compile(r"/\*\*(.*?)\*/", re.DOTALL)
JS_OBJECT_NAME = re.compile(r"@typedef \{object\} (\w+)")
JS_PROPERTY = re.compile(r"@property \{[^@]*?\} \[?(\w+)\]?")
JS_INTERSECTION = re.compile(r"@typedef \{(\w+) & \{([^}]*)\}\} (\w+)")


def python_shapes(source: str) -> dict[str, set[str]]:
    """Each TypedDict's keys, its bases' included."""
    shapes: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(base) for base in node.bases]
        if not any(base == "TypedDict" or base in shapes for base in bases):
            continue
        keys = {
            item.target.id
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        }
        for base in bases:
            keys |= shapes.get(base, set())
        shapes[node.name] = keys
    return shapes


def js_shapes(source: str) -> dict[str, set[str]]:
    shapes: dict[str, set[str]] = {}
    for comment in JS_TYPEDEF.findall(source):
        if named := JS_OBJECT_NAME.search(comment):
            shapes[named.group(1)] = set(JS_PROPERTY.findall(comment))
        elif joined := JS_INTERSECTION.search(re.sub(r"\s*\*\s*", " ", comment)):
            base, extra, name = joined.groups()
            keys = {part.split(":")[0].strip() for part in extra.split(",") if ":" in part}
            shapes[name] = shapes.get(base, set()) | keys
    return shapes


def shape_differences(python: dict[str, set[str]], js: dict[str, set[str]]) -> list[str]:
    differences = []
    for name, keys in sorted(python.items()):
        if name not in js:
            differences.append(f"{name}: no @typedef in frontend/js/types.js")
        elif keys != js[name]:
            only_py, only_js = sorted(keys - js[name]), sorted(js[name] - keys)
            differences.append(f"{name}: only in Python {only_py}, only in JS {only_js}")
    return differences


def test_the_js_typedefs_mirror_the_python_shapes() -> None:
    python = python_shapes(SHAPES.read_text(encoding="utf-8"))
    assert {"PlanSnapshot", "SubtaskSnapshot", "PlanEventData", "PlanPatch"} <= set(python)
    js = js_shapes(JS_TYPES.read_text(encoding="utf-8"))
    # The event is `PlanEvent` in JS, where no model class takes the name.
    js["PlanEventData"] = js.pop("PlanEvent", set())
    assert shape_differences(python, js) == []


def test_the_shape_check_catches_a_difference() -> None:
    python = python_shapes(
        "class A(TypedDict):\n    id: int\n    name: str\n\nclass B(A):\n    items: list[int]\n"
    )
    js = js_shapes(
        "/**\n * @typedef {object} A\n * @property {number} id\n * @property {string} nmae\n"
        " */\n/** @typedef {A & {items: number[]}} B */\n"
    )
    assert python == {"A": {"id", "name"}, "B": {"id", "name", "items"}}
    assert shape_differences(python, js) == [
        "A: only in Python ['name'], only in JS ['nmae']",
        "B: only in Python ['name'], only in JS ['nmae']",
    ]


# A silenced mypy error names its code and says why: `# type: ignore[code]` below a comment
# line, or followed by `# why`, explaining the stub gap.
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[\w,\- ]+\])?(\s*#\s*\S)?")


def unexplained_type_ignores(path: str, lines: list[str]) -> Iterator[str]:
    for number, line in enumerate(lines, 1):
        found = TYPE_IGNORE.search(line)
        if not found:
            continue
        above = lines[number - 2].strip() if number > 1 else ""
        explained = bool(found.group(2)) or above.startswith("#")
        if not found.group(1) or not explained:
            yield f"{path}:{number}: {line.strip()}"


def test_every_type_ignore_names_its_error_and_its_reason() -> None:
    found = [
        problem
        for path, _ in source_files()
        for problem in unexplained_type_ignores(
            path, (ROOT / path).read_text(encoding="utf-8").splitlines()
        )
    ]
    assert found == []


def test_the_type_ignore_check_catches_a_bare_ignore() -> None:
    lines = [
        "x: int = f()  # type: ignore",
        "y: int = f()  # type: ignore[assignment]",
        "# f's stub returns str; it returns an int here.",
        "z: int = f()  # type: ignore[assignment]",
        "w: int = f()  # type: ignore[assignment]  # f's stub returns str",
    ]
    assert list(unexplained_type_ignores("m.py", lines)) == [
        "m.py:1: x: int = f()  # type: ignore",
        "m.py:2: y: int = f()  # type: ignore[assignment]",
    ]


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Which of our modules each of our modules imports (anywhere in it: an import inside a
    function ties the two modules as much as one at the top). `from package import name`
    counts as importing the module `package.name` when there is one."""
    trees = dict(source_files())
    modules = {module_name(path): path for path in trees}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        for node in ast.walk(trees[path]):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            graph[name] |= {target for target in targets if target in modules and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    """Modules of agents/ and planboard/ import each other in one direction only: a circle
    makes each side's meaning depend on the other's, and its import order fragile."""
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
