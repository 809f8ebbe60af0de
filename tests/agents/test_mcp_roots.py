"""Roots that respect the operator: a toolset declares none (a server keeps the folders it
was started with; the roots capability is not even declared) or the session's workspace (a
folder tree of the session's files under their own names; what the server writes there comes
back as the session's Files, within the workspace's limits and approval policy). Against the
official filesystem server, pinned in package.json, and the reference "everything" server."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from agents import workspace_tree
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Toolset, ToolsetTool
from tests.support.env import ROOT, require_or_skip
from tests.support.runs import HostLoop, post, result_of
from tests.support.scripted import ScriptedModel, call, say, tool_calls
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

FILESYSTEM_SERVER = ROOT / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
EVERYTHING_SERVER = ROOT / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.fixture(autouse=True)
def roots_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session given a tree starts its first call once the server has *applied* its roots.

    Planboard waits for the server to ask for them and for a ping after; the filesystem server
    applies them on its own event loop after checking each folder on disk, which on a loaded
    machine can come after the ping's answer. These tests are about what a call does with the
    tree, so they wait for the server to list the tree among its allowed folders."""
    from agents.mcp.live import Live

    rooted = Live._rooted

    async def rooted_and_applied(self: Live, session: Any) -> None:
        await rooted(self, session)
        if self.tree is None or "list_allowed_directories" not in {
            tool.name for tool in (await session.list_tools()).tools
        }:
            return
        for _ in range(600):
            listed = await session.call_tool("list_allowed_directories", {})
            if any(self.tree.folder.name in getattr(c, "text", "") for c in listed.content):
                return
            await anyio.sleep(0.05)

    monkeypatch.setattr(Live, "_rooted", rooted_and_applied)


def node_server(script: Path, *args: str) -> list[str]:
    node = shutil.which("node")
    if node is None or not script.exists():
        require_or_skip("the reference MCP servers need Node.js and `npm ci`")
    return [str(node), str(script), *args]


def toolset_of(superuser: Any, name: str, argv: list[str], roots: str) -> Toolset:
    toolset = services.toolset_create(
        user=superuser, name=name, kind="stdio", command=argv[0], args=argv[1:], roots=roots
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    names = ToolsetTool.objects.filter(toolset=toolset).values_list("name", flat=True)
    services.toolset_update(
        toolset_id=toolset.pk, user=superuser, tool_policies={n: "auto" for n in names}
    )
    toolset.refresh_from_db()
    return toolset


def session_with(user: Any, *toolsets: Toolset) -> ChatSession:
    session = services.session_create(owner=user, need_user_confirm=False)
    ids = [t.pk for t in toolsets]
    services.session_set_toolsets(session_id=session.pk, toolset_ids=ids, user=user)
    return session


def file_bytes(session: ChatSession, path: str) -> bytes:
    row = selectors.workspace_file(session_id=session.pk, path=path)
    assert row is not None, f"no session file {path}"
    return selectors.workspace_file_bytes(row)


# --- the filesystem server --------------------------------------------------------------------


def test_roots_off_the_server_writes_in_its_own_folder(
    superuser: Any, user: Any, tmp_path: Path, scripted_model: ScriptedModel
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    fs = toolset_of(superuser, "fs", node_server(FILESYSTEM_SERVER, str(own)), "none")
    session = session_with(user, fs)
    target = str(own / "kept.txt")
    scripted_model.script.extend(
        [
            tool_calls(call("fs__write_file", call_id="w", path=target, content="mine")),
            tool_calls(call("fs__list_allowed_directories", call_id="l")),
            say("Done."),
        ]
    )
    with HostLoop() as host:
        assert host.drive(post(session, user)).status == "succeeded"
    # Planboard sent no roots: the folder it was started with still holds.
    assert (own / "kept.txt").read_text() == "mine"
    assert str(own.resolve()) in result_of(session, "l")
    assert "Planboard" not in result_of(session, "w")
    assert selectors.session_files(session_id=session.pk) == []


def test_workspace_roots_give_the_sessions_files_and_take_what_it_writes(
    superuser: Any, user: Any, scripted_model: ScriptedModel
) -> None:
    # Started without folders of its own: the session's tree is all it may touch.
    fs = toolset_of(superuser, "fs", node_server(FILESYSTEM_SERVER), "workspace")
    session = session_with(user, fs, services.toolset_ensure_workspace())
    services.workspace_file_write(session_id=session.pk, path="notes/plan.md", content="Day 1")
    scripted_model.script.extend(
        [
            tool_calls(call("fs__list_allowed_directories", call_id="l")),
            tool_calls(call("fs__read_text_file", call_id="r", path="notes/plan.md")),
            tool_calls(
                call("fs__write_file", call_id="w", path="notes/report.md", content="Report"),
                call("fs__write_file", call_id="x", path="/etc/escape.txt", content="no"),
                call("fs__write_file", call_id="y", path="../escape.txt", content="no"),
            ),
            say("Done."),
        ]
    )
    with HostLoop() as host:
        assert host.drive(post(session, user)).status == "succeeded"
        match = re.search(r"/\S*planboard-roots-[^\s/]+", result_of(session, "l"))
        assert match is not None, result_of(session, "l")
        tree = Path(match.group(0))
        assert tree.is_dir()
    assert not tree.exists()  # removed with the session
    assert "Day 1" in result_of(session, "r")
    assert file_bytes(session, "notes/report.md") == b"Report"
    assert "wrote notes/report.md (6 bytes)" in result_of(session, "w")
    for refused in ("x", "y"):
        assert "Access denied" in result_of(session, refused)
    assert not Path("/etc/escape.txt").exists()
    assert not (tree.parent / "escape.txt").exists()
    paths = [f["path"] for f in selectors.session_files(session_id=session.pk)]
    assert paths == ["notes/plan.md", "notes/report.md"]


def test_workspace_writes_follow_the_workspace_policy(
    superuser: Any, user: Any, scripted_model: ScriptedModel
) -> None:
    fs = toolset_of(superuser, "fs", node_server(FILESYSTEM_SERVER), "workspace")
    builtin = services.toolset_ensure_workspace()
    session = session_with(user, fs, builtin)
    services.toolset_update(
        toolset_id=builtin.pk, user=superuser, tool_policies={"write_file": "ask"}
    )
    scripted_model.script.extend(
        [
            tool_calls(call("fs__write_file", call_id="w", path="a.md", content="x")),
            say("Done."),
        ]
    )
    with HostLoop() as host:
        assert host.drive(post(session, user)).status == "succeeded"
    assert "a.md (the workspace's write_file asks a person first)" in result_of(session, "w")
    assert selectors.session_files(session_id=session.pk) == []


# --- roots/list per setting -------------------------------------------------------------------


def test_roots_list_is_answered_per_setting(
    superuser: Any, user: Any, scripted_model: ScriptedModel
) -> None:
    argv = node_server(EVERYTHING_SERVER, "stdio")
    off = toolset_of(superuser, "off", argv, "none")
    on = toolset_of(superuser, "on", argv, "workspace")
    # The server offers its roots tool only to a client that declares the capability.
    assert not ToolsetTool.objects.filter(toolset=off, name="get-roots-list").exists()
    assert ToolsetTool.objects.filter(toolset=on, name="get-roots-list").exists()
    session = session_with(user, on)
    scripted_model.script.extend(
        [tool_calls(call("on__get-roots-list", call_id="g")), say("Rooted.")]
    )
    with HostLoop() as host:
        assert host.drive(post(session, user)).status == "succeeded"
    assert re.search(r"file:///\S*planboard-roots-", result_of(session, "g"))


# --- the tree, directly -----------------------------------------------------------------------


@pytest.fixture
def tree() -> Any:
    made = workspace_tree.Tree.make()
    yield made
    made.remove()


def never_asks(tool: str) -> bool:
    return False


def test_collect_never_follows_links_out_of_the_tree(
    user: Any, tree: workspace_tree.Tree, tmp_path: Path
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    os.symlink(secret, tree.folder / "link.txt")
    (tree.folder / "dir").symlink_to(tmp_path, target_is_directory=True)
    (tree.folder / ".hidden").write_text("x")
    report = workspace_tree.collect(tree, session_id=session.pk, run_id=None, asks=never_asks)
    assert selectors.session_files(session_id=session.pk) == []
    assert "link.txt (a link or special file: never followed)" in report.note()
    assert "dir (a link or special file" in report.note()
    assert "?hidden (not a name the workspace takes)" in report.note() or ".hidden" in str(
        report.refused
    )
    # The tree is made the session's again before the next call: the links are gone.
    workspace_tree.materialize(tree, session_id=session.pk)
    assert list(tree.folder.iterdir()) == []
    assert secret.read_text() == "outside"


def test_collect_keeps_the_size_and_count_limits(
    user: Any, tree: workspace_tree.Tree, settings: Any
) -> None:
    settings.PLANBOARD_WORKSPACE_FILE_LIMIT = 10
    settings.PLANBOARD_WORKSPACE_MAX_FILES = 2
    session = services.session_create(owner=user, need_user_confirm=False)
    workspace_tree.materialize(tree, session_id=session.pk)
    (tree.folder / "big.bin").write_bytes(b"x" * 11)
    for name in ("a.md", "b.md", "c.md"):
        (tree.folder / name).write_text(name)
    report = workspace_tree.collect(tree, session_id=session.pk, run_id=None, asks=never_asks)
    assert "big.bin (11 bytes; a workspace file may hold at most 10)" in report.note()
    assert "c.md (The workspace holds 2 files already" in report.note()
    assert [f["path"] for f in selectors.session_files(session_id=session.pk)] == ["a.md", "b.md"]
    # What was refused is undone in the tree before the next call.
    workspace_tree.materialize(tree, session_id=session.pk)
    assert sorted(p.name for p in tree.folder.iterdir()) == ["a.md", "b.md"]


def test_deletions_and_emptying_follow_delete_file(user: Any, tree: workspace_tree.Tree) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    services.workspace_file_write(session_id=session.pk, path="a.md", content="keep me")
    services.workspace_file_write(session_id=session.pk, path="b.md", content="and me")
    workspace_tree.materialize(tree, session_id=session.pk)
    assert (tree.folder / "a.md").read_text() == "keep me"
    (tree.folder / "a.md").unlink()
    (tree.folder / "b.md").write_text("  ")
    asked: list[str] = []

    def deleting_asks(tool: str) -> bool:
        asked.append(tool)
        return tool == "delete_file"

    report = workspace_tree.collect(tree, session_id=session.pk, run_id=None, asks=deleting_asks)
    assert "the deletion of a.md (the workspace's delete_file asks" in report.note()
    assert "b.md (the workspace's delete_file asks a person first)" in report.note()
    assert file_bytes(session, "a.md") == b"keep me"  # type: ignore[arg-type]
    workspace_tree.materialize(tree, session_id=session.pk)
    assert (tree.folder / "a.md").read_text() == "keep me"
    assert (tree.folder / "b.md").read_text() == "and me"
    # Allowed, a deletion is applied.
    (tree.folder / "a.md").unlink()
    report = workspace_tree.collect(tree, session_id=session.pk, run_id=None, asks=never_asks)
    assert report.deleted == ["a.md"]
    assert selectors.workspace_file(session_id=session.pk, path="a.md") is None


# --- the setting ------------------------------------------------------------------------------


def test_roots_is_a_toolset_field_of_the_api_with_its_rules(
    superuser: Any, staff_admin: Any
) -> None:
    client = api_client_for(superuser)
    made = client.post(
        "/api/toolsets/",
        {"name": "prog", "kind": "stdio", "command": "/bin/true", "roots": "workspace"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["roots"] == "workspace"
    assert Toolset.objects.get(name="prog").roots == Toolset.Roots.WORKSPACE
    bad = client.patch(f"/api/toolsets/{made.json()['id']}/", {"roots": "all"}, format="json")
    assert bad.status_code == 400
    http = client.post(
        "/api/toolsets/",
        {
            "name": "remote",
            "kind": "http",
            "url": "https://93.184.215.14/mcp",
            "roots": "workspace",
        },
        format="json",
    )
    assert http.status_code == 400
    assert "Only a stdio toolset" in json.dumps(http.json())
    # Handing a program the session's files is a program setting.
    with pytest.raises(PlanError, match="roots"):
        services.toolset_update(toolset_id=made.json()["id"], user=staff_admin, roots="none")
    assert Toolset.objects.get(name="prog").roots == Toolset.Roots.WORKSPACE
    assert Toolset._meta.get_field("roots").default == Toolset.Roots.NONE


def test_the_admin_form_sets_roots(superuser: Any, client: Any) -> None:
    client.force_login(superuser)
    toolset = services.toolset_create(
        user=superuser, name="prog", kind="stdio", command="/bin/true", args=[]
    )
    page = client.get(f"/admin/planboard/toolset/{toolset.pk}/change/")
    assert page.status_code == 200
    assert b'name="roots"' in page.content
