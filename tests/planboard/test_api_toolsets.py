"""Toolsets and tool calls over the REST API: who may configure (staff with the toolset's
model permissions; stdio also `run_stdio_toolset`), enable (the owner) and decide (the owner or
staff with `change_toolcall`; a lead only reads), and secrets that never come back. `staff` is
bare staff (refused like a member), `staff_admin` holds the admins' permissions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from planboard import services
from planboard.models import AgentRun, ChatSession, ToolCall, Toolset
from tests.support.mcp_servers import API_KEY, HttpServer
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

SECRET = "Bearer sk-live-0123456789"
LISTED = [
    {"name": "search", "input_schema": {"type": "object"}, "read_only": True},
    {"name": "write", "input_schema": {"type": "object"}},
]


@pytest.fixture
def files(staff_admin: Any) -> Toolset:
    toolset = services.toolset_create(
        user=staff_admin,
        name="files",
        title="Files",
        kind="http",
        url="https://tools.example.com/mcp?team=blue",
        headers={"Authorization": SECRET},
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=LISTED)
    return toolset


@pytest.fixture
def hidden(superuser: Any) -> Toolset:
    return services.toolset_create(
        user=superuser,
        name="shell",
        kind="stdio",
        command="/usr/bin/mcp-shell",
        env={"SHELL_TOKEN": "tok-abcdef"},
        enabled=False,
    )


# --- configuring ------------------------------------------------------------------------------


def test_people_list_usable_toolsets_staff_see_configuration_never_secrets(
    user: Any, staff: Any, staff_admin: Any, files: Toolset, hidden: Toolset
) -> None:
    for person in (user, staff):  # bare staff see what a member sees
        response = api_client_for(person).get("/api/toolsets/")
        assert response.status_code == 200
        (only,) = [t for t in response.json() if t["kind"] != "builtin"]  # besides the workspace
        assert (only["name"], only["kind"], only["enabled"]) == ("files", "http", True)
        assert [(t["name"], t["policy"]) for t in only["tools"]] == [
            ("search", "auto"),
            ("write", "ask"),
        ]
        assert not {"command", "args", "url", "env_names", "header_names"} & set(only)
        assert api_client_for(person).get(f"/api/toolsets/{hidden.pk}/").status_code == 404

    response = api_client_for(staff_admin).get("/api/toolsets/")
    body = response.content.decode()
    rows = {t["name"]: t for t in response.json()}
    assert set(rows) == {"files", "shell", "workspace"}
    assert rows["files"]["header_names"] == ["Authorization"]
    assert rows["shell"]["env_names"] == ["SHELL_TOKEN"]
    assert rows["shell"]["command"] == "/usr/bin/mcp-shell"
    assert SECRET not in body and "tok-abcdef" not in body
    assert APIClient().get("/api/toolsets/").status_code == 401


def test_only_staff_with_the_permissions_write_toolsets(
    user: Any, staff: Any, staff_admin: Any, superuser: Any, lead: Any, files: Toolset
) -> None:
    body = {"name": "web", "kind": "http", "url": "https://web.test/mcp", "headers": {"X-K": "v"}}
    before = list(Toolset.objects.values())
    for person in (user, lead, staff):
        assert api_client_for(person).post("/api/toolsets/", body, format="json").status_code == 403
        patch = api_client_for(person).patch(f"/api/toolsets/{files.pk}/", {"title": "x"}, "json")
        assert patch.status_code == 403
        assert api_client_for(person).delete(f"/api/toolsets/{files.pk}/").status_code == 403
        refresh = api_client_for(person).post(f"/api/toolsets/{files.pk}/refresh/")
        assert refresh.status_code == 403
    assert list(Toolset.objects.values()) == before
    staff = staff_admin
    created = api_client_for(staff).post("/api/toolsets/", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["header_names"] == ["X-K"] and "v" not in created.json().values()
    # A program on the workers needs more than add_toolset.
    program = {"name": "prog", "kind": "stdio", "command": "/bin/mcp", "args": ["--ro"]}
    refused = api_client_for(staff).post("/api/toolsets/", program, format="json")
    assert refused.status_code == 403 and "run_stdio_toolset" in refused.json()["error"]
    assert not Toolset.objects.filter(name="prog").exists()
    made = api_client_for(superuser).post("/api/toolsets/", program, format="json")
    assert made.status_code == 201 and made.json()["args"] == ["--ro"]

    url = f"/api/toolsets/{files.pk}/"
    patched = api_client_for(staff).patch(
        url,
        {"headers": {"X-Team": "blue"}, "tool_policies": {"search": "ask", "write": "never"}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    assert patched.json()["header_names"] == ["Authorization", "X-Team"]
    tools = {t["name"]: t for t in patched.json()["tools"]}
    assert tools["search"]["policy"] == "ask" and tools["search"]["policy_overridden"]
    assert Toolset.objects.get(pk=files.pk).headers["Authorization"] == SECRET  # kept unseen
    assert api_client_for(staff).delete(url).status_code == 204
    assert not Toolset.objects.filter(pk=files.pk).exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "x", "kind": "http", "url": "file:///etc/passwd"}, "http(s) URL"),
        ({"name": "x", "kind": "http", "url": "https://a.test", "secret": 1}, "Unknown field"),
        ({"name": "a__b", "kind": "http", "url": "https://a.test"}, "single '_'"),
        ({"name": "x", "kind": "http", "url": "https://a.test", "headers": ["a"]}, "dictionary"),
    ],
)
def test_bad_toolsets_are_refused_clearly(
    staff_admin: Any, body: dict[str, Any], message: str
) -> None:
    response = api_client_for(staff_admin).post("/api/toolsets/", body, format="json")
    assert response.status_code == 400 and message in response.json()["error"], response.json()


def test_staff_refresh_tools_from_a_real_server(staff_admin: Any, mcp_http: HttpServer) -> None:
    staff = staff_admin
    toolset = services.toolset_create(
        user=staff, name="remote", kind="http", url=mcp_http.url, headers={"X-Api-Key": API_KEY}
    )
    response = api_client_for(staff).post(f"/api/toolsets/{toolset.pk}/refresh/")
    assert response.status_code == 200, response.json()
    assert {"echo", "write_note"} <= set(response.json()["added"])
    tools = {t["name"]: t for t in response.json()["toolset"]["tools"]}
    assert tools["echo"]["read_only"] and tools["echo"]["policy"] == "auto"
    assert tools["write_note"]["policy"] == "ask"
    assert API_KEY not in response.content.decode()

    gone = services.toolset_create(user=staff, name="gone", kind="http", url="http://127.0.0.1:9")
    failed = api_client_for(staff).post(f"/api/toolsets/{gone.pk}/refresh/")
    assert failed.status_code == 400
    assert failed.json()["code"] == "toolset_unreachable"
    assert "toolset 'gone'" in failed.json()["error"]


# --- enabling in a session --------------------------------------------------------------------


def test_the_owner_enables_toolsets_in_a_session(
    user: Any, lead: Any, other_user: Any, staff: Any, staff_admin: Any,
    chat_session: ChatSession, files: Toolset, hidden: Toolset,
) -> None:  # fmt: skip
    url = f"/api/sessions/{chat_session.pk}/"
    response = api_client_for(user).patch(url, {"toolsets": [files.pk]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["toolsets"] == [files.pk]
    assert api_client_for(user).get(url).json()["toolsets"] == [files.pk]
    assert api_client_for(lead).patch(url, {"toolsets": []}, format="json").status_code == 403
    assert api_client_for(other_user).patch(url, {"toolsets": []}, format="json").status_code == 404
    assert api_client_for(staff).patch(url, {"toolsets": []}, format="json").status_code == 404
    refused = api_client_for(user).patch(url, {"toolsets": [hidden.pk]}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "unknown_toolset"
    bad = api_client_for(user).patch(url, {"toolsets": ["files"]}, format="json")
    assert bad.status_code == 400
    # Settings and toolsets change together, or not at all.
    both = api_client_for(user).patch(url, {"title": "New", "toolsets": [hidden.pk]}, format="json")
    assert both.status_code == 400
    assert ChatSession.objects.get(pk=chat_session.pk).title == "Trip"
    cleared = api_client_for(staff_admin).patch(url, {"toolsets": [], "title": "T"}, format="json")
    assert cleared.json()["toolsets"] == [] and cleared.json()["title"] == "T"


# --- tool calls -------------------------------------------------------------------------------


@pytest.fixture
def pending(chat_session: ChatSession, user: Any, files: Toolset) -> AgentRun:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    services.run_start(run_id=run.pk, worker="w")
    for call_id in ("c1", "c2"):
        services.tool_call_open(
            session_id=chat_session.pk, run_id=run.pk, tool_call_id=call_id,
            tool_name="files__write", toolset_id=files.pk, tool="write",
            arguments={"path": "a"}, read_only=False, status="pending",
        )  # fmt: skip
    return services.run_pause_for_approval(run_id=run.pk)


def decision_url(session: ChatSession, call_id: str) -> str:
    return f"/api/sessions/{session.pk}/tool-calls/{call_id}/decision/"


def test_calls_are_read_by_whoever_reads_the_session(
    user: Any, lead: Any, other_user: Any, staff: Any, staff_admin: Any,
    chat_session: ChatSession, pending: AgentRun,
) -> None:  # fmt: skip
    url = f"/api/sessions/{chat_session.pk}/tool-calls/"
    for reader in (user, lead, staff_admin):
        response = api_client_for(reader).get(url)
        assert response.status_code == 200
        assert [c["tool_call_id"] for c in response.json()["results"]] == ["c1", "c2"]
    for stranger in (other_user, staff):
        assert api_client_for(stranger).get(url).status_code == 404
    assert APIClient().get(url).status_code == 401
    first = api_client_for(user).get(url).json()["results"][0]
    assert (first["status"], first["tool_name"], first["arguments"]) == (
        "pending",
        "files__write",
        {"path": "a"},
    )
    snapshot = api_client_for(user).get(f"/api/sessions/{chat_session.pk}/").json()
    assert [c["tool_call_id"] for c in snapshot["pending_tool_calls"]] == ["c1", "c2"]
    assert snapshot["calls_in_flight"] == []  # waiting for a person, not for a server
    assert snapshot["latest_run"]["status"] == "waiting_for_approval"
    assert snapshot["latest_run"]["pause_reason"] == "approval"
    assert api_client_for(user).get(url + "?status=denied").json()["results"] == []
    assert api_client_for(user).get(url + "?status=maybe").status_code == 400


def test_the_owner_or_staff_decide_a_lead_cannot(
    user: Any, lead: Any, other_user: Any, staff: Any, staff_admin: Any,
    chat_session: ChatSession, pending: AgentRun,
) -> None:  # fmt: skip
    approve = {"decision": "approve"}
    url = decision_url(chat_session, "c1")
    assert api_client_for(lead).post(url, approve, "json").status_code == 403
    for stranger in (other_user, staff):
        assert api_client_for(stranger).post(url, approve, "json").status_code == 404
    assert ToolCall.objects.get(tool_call_id="c1").status == "pending"

    denied = api_client_for(user).post(
        decision_url(chat_session, "c1"), {"decision": "deny", "note": "Not now"}, "json"
    )
    assert denied.status_code == 200, denied.json()
    assert denied.json()["tool_call"]["status"] == "denied"
    assert denied.json()["tool_call"]["note"] == "Not now"
    assert denied.json()["tool_call"]["decided_by"] == "alice"
    assert denied.json()["run"]["status"] == "waiting_for_approval"  # c2 still waits
    approved = api_client_for(staff_admin).post(decision_url(chat_session, "c2"), approve, "json")
    assert approved.json()["tool_call"]["decided_by"] == "boss"
    assert approved.json()["run"]["status"] == "queued"
    again = api_client_for(user).post(decision_url(chat_session, "c2"), approve, "json")
    assert again.status_code == 400 and again.json()["code"] == "already_decided"


@pytest.mark.parametrize(
    ("call_id", "body", "status"),
    [
        ("nope", {"decision": "approve"}, 404),
        ("c1", {"decision": "maybe"}, 400),
        ("c1", {"decision": "approve", "always_allow": "yes"}, 400),
        ("c1", {"decision": "deny", "always_allow": True}, 400),
        ("c1", {"decision": "approve", "extra": 1}, 400),
        ("c1", {}, 400),
    ],
)
def test_bad_decisions_are_refused(
    user: Any, chat_session: ChatSession, pending: AgentRun, call_id: str,
    body: dict[str, Any], status: int,
) -> None:  # fmt: skip
    response = api_client_for(user).post(decision_url(chat_session, call_id), body, format="json")
    assert response.status_code == status, response.json()
    assert ToolCall.objects.get(tool_call_id="c1").status == "pending"


def test_the_schema_documents_the_new_endpoints(tmp_path: Any) -> None:
    target = tmp_path / "schema.json"
    call_command("spectacular", "--file", str(target), "--format", "openapi-json", "--validate")
    paths = json.loads(target.read_text())["paths"]
    for path in (
        "/api/toolsets/",
        "/api/toolsets/{toolset_id}/",
        "/api/toolsets/{toolset_id}/refresh/",
        "/api/sessions/{session_id}/tool-calls/",
        "/api/sessions/{session_id}/tool-calls/{call_id}/decision/",
    ):
        assert path in paths, path
