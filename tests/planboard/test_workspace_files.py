"""Session workspace files outside the loop: the services and their storage, the built-in
toolset's rules, the session snapshot and `session.files` event, and who may list and
download files over the REST API and the web route (owner, team leads, staff; others 404)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from rest_framework.test import APIClient

from planboard import selectors, services, workspace
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Toolset, ToolsetTool, WorkspaceFile
from tests.support.admin import tool_row, tools_inline
from tests.support.web import api_client_for, client_for

pytestmark = pytest.mark.django_db


def blobs(session: ChatSession) -> list[str]:
    folder = f"workspace/{session.pk}"
    return sorted(default_storage.listdir(folder)[1]) if default_storage.exists(folder) else []


@pytest.fixture
def written(chat_session: ChatSession, django_capture_on_commit_callbacks: Any) -> WorkspaceFile:
    with django_capture_on_commit_callbacks(execute=True):
        return services.workspace_file_write(
            session_id=chat_session.pk, path="kyoto/itinerary.md", content="# Kyoto\n\nDay 1"
        )


# --- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["a.md", "notes/day-1.md", "_x", "A/B/C/D/e.tar.gz", "x" * 100, "v1.2_final-3"]
)
def test_good_paths_pass_unchanged(path: str) -> None:
    assert workspace.clean_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../a",
        "a/..",
        "./a",
        "/a",
        "\\a",
        "C:x",
        "a\\b",
        "a//b",
        "a/",
        ".hidden",
        "a/.git/config",
        "-a",
        "a b",
        "a\x00b",
        "a\nb",
        "é.md",
        "%2e%2e/a",
        "x" * 101,
        "a/b/c/d/e/f",
        "   ",
        None,
        7,
    ],
)
def test_bad_paths_are_refused(path: Any) -> None:
    with pytest.raises(PlanError, match="'path'"):
        workspace.clean_path(path)


@pytest.mark.parametrize(
    ("path", "served_as"),
    [
        ("a.md", "text/plain; charset=utf-8"),
        ("a.txt", "text/plain; charset=utf-8"),
        ("a.csv", "text/plain; charset=utf-8"),
        ("a.json", "text/plain; charset=utf-8"),
        ("a.html", "text/plain; charset=utf-8"),
        ("a.svg", "application/octet-stream"),
        ("a.js", "text/plain; charset=utf-8"),
        ("noext", "text/plain; charset=utf-8"),
        ("a.png", "application/octet-stream"),
        ("a.pdf", "application/octet-stream"),
    ],
)
def test_downloads_are_text_or_bytes_never_pages(path: str, served_as: str) -> None:
    assert workspace.content_type(path) == served_as


# --- services ---------------------------------------------------------------------------------


def test_a_file_is_stored_with_its_row(written: WorkspaceFile, chat_session: ChatSession) -> None:
    assert (written.path, written.size, written.produced_by_id) == ("kyoto/itinerary.md", 14, None)
    assert written.storage_name.startswith(f"workspace/{chat_session.pk}/")
    assert "kyoto" not in written.storage_name  # the path never names the blob
    assert selectors.workspace_file_bytes(written) == b"# Kyoto\n\nDay 1"


def test_replacing_a_file_removes_the_old_blob_on_commit(
    written: WorkspaceFile, chat_session: ChatSession, django_capture_on_commit_callbacks: Any
) -> None:
    old = written.storage_name
    with django_capture_on_commit_callbacks(execute=True):
        again = services.workspace_file_write(
            session_id=chat_session.pk, path=written.path, content="new"
        )
    assert again.pk == written.pk and again.storage_name != old
    assert not default_storage.exists(old)
    assert blobs(chat_session) == [again.storage_name.rsplit("/", 1)[1]]
    assert selectors.workspace_file_bytes(again) == b"new"


def test_a_refused_write_leaves_no_blob(
    chat_session: ChatSession, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_WORKSPACE_MAX_FILES = 0
    with pytest.raises(PlanError, match="holds 0 files already"):
        services.workspace_file_write(session_id=chat_session.pk, path="a.md", content="x")
    assert blobs(chat_session) == [] and not WorkspaceFile.objects.exists()


def test_deleting_a_file_removes_its_blob_on_commit(
    written: WorkspaceFile, chat_session: ChatSession, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.workspace_file_delete(session_id=chat_session.pk, path=written.path)
    assert not WorkspaceFile.objects.exists() and blobs(chat_session) == []
    with pytest.raises(PlanError) as missing:
        services.workspace_file_delete(session_id=chat_session.pk, path=written.path)
    assert missing.value.code == "not_found"


def test_deleting_a_session_removes_its_blobs(
    written: WorkspaceFile, chat_session: ChatSession, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        ChatSession.objects.filter(pk=chat_session.pk).delete()
    assert blobs(chat_session) == []


def test_writes_to_a_missing_session_are_refused(db: Any) -> None:
    with pytest.raises(PlanError) as missing:
        services.workspace_file_write(session_id=999_999, path="a.md", content="x")
    assert missing.value.code == "not_found"
    assert default_storage.listdir("workspace/999999")[1] == []


def test_changes_are_broadcast_as_session_files(
    chat_session: ChatSession, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.workspace_file_write(session_id=chat_session.pk, path="a.md", content="a")
        services.workspace_file_write(session_id=chat_session.pk, path="a.md", content="ab")
        services.workspace_file_delete(session_id=chat_session.pk, path="a.md")
    sent = [e for g, e in events.items if g == f"session.{chat_session.pk}"]
    assert [(e["type"], e["action"], e["path"]) for e in sent] == [
        ("session.files", "created", "a.md"),
        ("session.files", "updated", "a.md"),
        ("session.files", "deleted", "a.md"),
    ]
    first, second, last = (e["files"] for e in sent)
    assert [(f["path"], f["size"]) for f in first] == [("a.md", 1)]
    assert [(f["path"], f["size"]) for f in second] == [("a.md", 2)]
    assert last == [] and all(e["session_id"] == chat_session.pk for e in sent)


def test_the_session_snapshot_lists_its_files(
    written: WorkspaceFile, chat_session: ChatSession
) -> None:
    (entry,) = selectors.session_snapshot(session_id=chat_session.pk)["files"]
    assert entry == {
        "id": written.pk,
        "path": "kyoto/itinerary.md",
        "size": 14,
        "produced_by_run_id": None,
        "created_at": written.created_at.isoformat(),
        "updated_at": written.updated_at.isoformat(),
        "url": f"/api/sessions/{chat_session.pk}/files/kyoto/itinerary.md",
        "download_url": f"/sessions/{chat_session.pk}/files/kyoto/itinerary.md",
    }


# --- the built-in toolset ---------------------------------------------------------------------


def test_the_builtin_toolset_has_its_own_default_policies(db: Any) -> None:
    toolset = services.toolset_ensure_workspace()
    assert services.toolset_ensure_workspace().pk == toolset.pk  # made once
    policies = {t.name: (t.policy, t.read_only) for t in toolset.tools.all()}
    assert policies == {
        "delete_file": ("ask", False),
        "list_files": ("auto", True),
        "read_file": ("auto", True),
        "write_file": ("auto", False),
    }


def test_a_fresh_database_gets_the_toolset_when_a_session_is_made(user: Any) -> None:
    Toolset.objects.filter(name="workspace").delete()  # as after a test database flush
    session = services.session_create(owner=user)
    toolset = Toolset.objects.get(name="workspace")
    assert toolset.tools.count() == 4
    assert selectors.session_toolset_ids(session_id=session.pk) == [toolset.pk]


def test_staff_set_policies_and_refresh_restores_the_defaults(staff: Any) -> None:
    toolset = services.toolset_ensure_workspace()
    services.toolset_update(toolset_id=toolset.pk, user=staff, tool_policies={"write_file": "ask"})
    ToolsetTool.objects.filter(toolset=toolset, name="read_file").update(description="stale")
    result = services.toolset_refresh_tools(toolset_id=toolset.pk)
    assert result.added == [] and result.removed == []
    tools = {t.name: t for t in toolset.tools.all()}
    assert tools["write_file"].policy == "ask"  # staff's choice survives
    assert tools["read_file"].description.startswith("Read a text file")
    assert tools["delete_file"].policy == "ask"
    services.toolset_update(toolset_id=toolset.pk, user=staff, tool_policies={"write_file": None})
    assert toolset.tools.get(name="write_file").policy == "auto"  # back to its own default


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "http"}, "only its title"),
        ({"url": "https://x.test/mcp"}, "only its title"),
        ({"command": "/bin/sh"}, "only its title"),
        ({"env": {"A": "b"}}, "only its title"),
    ],
)
def test_a_builtin_toolset_cannot_become_something_else(
    staff: Any, change: dict[str, Any], message: str
) -> None:
    toolset = services.toolset_ensure_workspace()
    with pytest.raises(PlanError, match=message):
        services.toolset_update(toolset_id=toolset.pk, user=staff, **change)
    assert Toolset.objects.get(pk=toolset.pk).kind == Toolset.Kind.BUILTIN


def test_a_builtin_toolset_is_never_made_or_removed_by_hand(staff: Any) -> None:
    toolset = services.toolset_ensure_workspace()
    with pytest.raises(PlanError, match="cannot be removed"):
        services.toolset_delete(toolset_id=toolset.pk)
    with pytest.raises(PlanError, match="'kind' must be one of: stdio, http"):
        services.toolset_create(user=staff, name="mine", kind="builtin")
    Toolset.objects.filter(pk=toolset.pk).delete()
    with pytest.raises(PlanError, match="belongs to the built-in toolset"):
        services.toolset_create(user=staff, name="workspace", kind="http", url="http://x.test")
    services.toolset_update(
        toolset_id=services.toolset_ensure_workspace().pk, user=staff, title="T"
    )


def test_staff_edit_the_builtin_toolset_in_the_admin(admin_client: Client) -> None:
    toolset = services.toolset_ensure_workspace()
    url = f"/admin/planboard/toolset/{toolset.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200 and 'name="command"' not in page.content.decode()
    rows = (
        tool_row(tool, policy="auto") if tool.name == "delete_file" else tool_row(tool)
        for tool in toolset.tools.order_by("name")
    )
    form = {"title": "Files", **tools_inline(*rows)}
    response = admin_client.post(url, form)  # "enabled" left out: unticked
    assert response.status_code == 302, response.content.decode()[-2000:]
    toolset.refresh_from_db()
    assert (toolset.title, toolset.enabled, toolset.kind) == ("Files", False, "builtin")
    assert toolset.tools.get(name="delete_file").policy == "auto"


# --- REST API ---------------------------------------------------------------------------------


def test_people_who_see_the_session_list_and_download_its_files(
    written: WorkspaceFile, chat_session: ChatSession, user: Any, lead: Any, staff_admin: Any
) -> None:
    base = f"/api/sessions/{chat_session.pk}/files/"
    for person in (user, lead, staff_admin):
        listing = api_client_for(person).get(base)
        assert listing.status_code == 200
        assert [f["path"] for f in listing.json()["results"]] == ["kyoto/itinerary.md"]
        response = api_client_for(person).get(base + "kyoto/itinerary.md")
        assert response.status_code == 200
        assert response.getvalue() == b"# Kyoto\n\nDay 1"
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert response["Content-Disposition"] == 'attachment; filename="itinerary.md"'
        assert response["X-Content-Type-Options"] == "nosniff"
        assert "sandbox" in response["Content-Security-Policy"]


def test_others_get_404_and_anonymous_401(
    written: WorkspaceFile, chat_session: ChatSession, other_user: Any
) -> None:
    base = f"/api/sessions/{chat_session.pk}/files/"
    for url in (base, base + "kyoto/itinerary.md"):
        response = api_client_for(other_user).get(url)
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
        assert b"Kyoto" not in response.content
        assert APIClient().get(url).status_code == 401


def test_only_stored_paths_are_served(
    written: WorkspaceFile, chat_session: ChatSession, user: Any
) -> None:
    base = f"/api/sessions/{chat_session.pk}/files/"
    for path in (
        "nope.md",
        "kyoto/../kyoto/itinerary.md",
        "kyoto/%2e%2e/kyoto/itinerary.md",
        "KYOTO/itinerary.md",
        written.storage_name,
        "../../../etc/passwd",
    ):
        assert api_client_for(user).get(base + path).status_code == 404, path


def test_writing_through_the_api_is_not_possible(
    written: WorkspaceFile, chat_session: ChatSession, user: Any
) -> None:
    url = f"/api/sessions/{chat_session.pk}/files/kyoto/itinerary.md"
    assert api_client_for(user).delete(url).status_code == 405
    assert api_client_for(user).put(url, {"content": "x"}, format="json").status_code == 405
    assert WorkspaceFile.objects.count() == 1


def test_html_is_downloaded_never_rendered(chat_session: ChatSession, user: Any) -> None:
    services.workspace_file_write(
        session_id=chat_session.pk, path="page.html", content="<script>alert(1)</script>"
    )
    response = api_client_for(user).get(f"/api/sessions/{chat_session.pk}/files/page.html")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")


def test_the_session_api_carries_files(
    written: WorkspaceFile, chat_session: ChatSession, user: Any
) -> None:
    body = api_client_for(user).get(f"/api/sessions/{chat_session.pk}/").json()
    assert [f["path"] for f in body["files"]] == ["kyoto/itinerary.md"]
    download = api_client_for(user).get(body["files"][0]["url"])
    assert download.status_code == 200


# --- the web route ----------------------------------------------------------------------------


def test_the_web_route_serves_the_same_download(
    written: WorkspaceFile, chat_session: ChatSession, user: Any, lead: Any, other_user: Any
) -> None:
    url = selectors.session_files(session_id=chat_session.pk)[0]["download_url"]
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    for person, expected in ((user, 200), (lead, 200), (other_user, 404)):
        client = client_for(person)
        response = client.get(url)
        assert response.status_code == expected
        if expected == 200:
            assert response.getvalue() == b"# Kyoto\n\nDay 1"
            assert response["Content-Disposition"].startswith("attachment;")
            assert response["X-Content-Type-Options"] == "nosniff"
    client = client_for(user)
    assert client.get(f"/sessions/{chat_session.pk}/files/missing.md").status_code == 404
    assert client.post(url).status_code == 405
