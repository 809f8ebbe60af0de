"""A toolset lists its tools when it is created or reached differently (API and admin), says
why when its server cannot be reached, and never offers a tool Planboard cannot call (a tool
the server runs only as an MCP task), with the reason shown to staff."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from planboard import selectors, services
from planboard.models import ChatSession, Toolset, ToolsetTool
from planboard.services.tool_listing import TASK_ONLY, clean_listing
from tests.support.admin import toolset_form
from tests.support.mcp_servers import API_KEY, HttpServer, everything_server_argv
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

UNREACHABLE = "http://127.0.0.1:9/mcp"


def test_a_new_toolset_lists_the_reference_servers_tools_at_once(superuser: Any, user: Any) -> None:
    node, script, mode = everything_server_argv()
    body = {"name": "everything", "kind": "stdio", "command": node, "args": [script, mode]}
    response = api_client_for(superuser).post("/api/toolsets/", body, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["refresh_error"] == "" and data["refreshed_at"] is not None
    tools = {t["name"]: t for t in data["tools"]}
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(tools)
    # Runs only as a task: listed with the reason, never offered to a session's agent.
    assert tools["simulate-research-query"]["unsupported"] == TASK_ONLY
    assert tools["echo"]["unsupported"] == ""

    session = services.session_create(owner=user)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[data["id"]], user=user)
    offered = {t.name for t in selectors.session_tools(session_id=session.pk)}
    assert "echo" in offered and "simulate-research-query" not in offered


def test_an_unreachable_server_is_created_with_the_reason_and_fixed_by_a_change(
    staff_admin: Any, mcp_http: HttpServer
) -> None:
    client = api_client_for(staff_admin)
    created = client.post(
        "/api/toolsets/", {"name": "remote", "kind": "http", "url": UNREACHABLE}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["tools"] == [] and created.json()["refreshed_at"] is None
    assert "toolset 'remote'" in created.json()["refresh_error"]

    # Told where the server really is (and its key): listed again, the reason cleared.
    toolset_id = created.json()["id"]
    changed = client.patch(
        f"/api/toolsets/{toolset_id}/",
        {"url": mcp_http.url, "headers": {"X-Api-Key": API_KEY}},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["refresh_error"] == ""
    assert {"echo", "write_note"} <= {t["name"] for t in changed.json()["tools"]}

    # A change that does not touch how the server is reached asks it nothing.
    before = len(mcp_http.seen_keys)
    retitled = client.patch(f"/api/toolsets/{toolset_id}/", {"title": "Remote"}, format="json")
    assert retitled.status_code == 200 and len(mcp_http.seen_keys) == before


def test_a_failed_refresh_keeps_the_tools_and_records_why(
    staff_admin: Any, mcp_http: HttpServer
) -> None:
    client = api_client_for(staff_admin)
    body = {
        "name": "remote",
        "kind": "http",
        "url": mcp_http.url,
        "headers": {"X-Api-Key": API_KEY},
    }
    toolset_id = client.post("/api/toolsets/", body, format="json").json()["id"]
    Toolset.objects.filter(pk=toolset_id).update(url=UNREACHABLE)

    failed = client.post(f"/api/toolsets/{toolset_id}/refresh/")
    assert failed.status_code == 400 and failed.json()["code"] == "toolset_unreachable"
    shown = client.get(f"/api/toolsets/{toolset_id}/").json()
    assert shown["refresh_error"] == failed.json()["error"]
    # Nothing is lost: the tools listed before are all still there.
    assert {"echo", "write_note"} <= {t["name"] for t in shown["tools"]}


def test_only_staff_see_why_and_disabled_toolsets_are_not_asked(
    user: Any, staff_admin: Any
) -> None:
    toolset = services.toolset_create(user=staff_admin, name="remote", kind="http", url=UNREACHABLE)
    services.toolset_discover(toolset_id=toolset.pk)
    assert Toolset.objects.get(pk=toolset.pk).refresh_error
    # The reason may name hosts and paths: it is part of how the server is reached.
    seen = api_client_for(user).get(f"/api/toolsets/{toolset.pk}/")
    assert seen.status_code == 200 and "refresh_error" not in seen.json()
    # A disabled or built-in toolset is never asked.
    services.toolset_update(toolset_id=toolset.pk, user=staff_admin, enabled=False)
    Toolset.objects.filter(pk=toolset.pk).update(refresh_error="")
    assert services.toolset_discover(toolset_id=toolset.pk) is None
    assert Toolset.objects.get(pk=toolset.pk).refresh_error == ""


def test_the_admin_lists_a_new_toolsets_tools_or_says_why_it_could_not(
    admin_client: Client, mcp_http: HttpServer
) -> None:
    response = admin_client.post(
        "/admin/planboard/toolset/add/",
        toolset_form(name="gone", kind="http", url=UNREACHABLE),
        follow=True,
    )
    assert response.status_code == 200
    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert any("its tools could not be listed" in m and "toolset 'gone'" in m for m in said), said
    gone = Toolset.objects.get(name="gone")
    page = admin_client.get(f"/admin/planboard/toolset/{gone.pk}/change/").content.decode()
    assert "toolset &#x27;gone&#x27;" in page or "toolset 'gone'" in page

    admin_client.post(
        "/admin/planboard/toolset/add/",
        toolset_form(
            name="remote", kind="http", url=mcp_http.url, headers=f'{{"X-Api-Key": "{API_KEY}"}}'
        ),
        follow=True,
    )
    remote = Toolset.objects.get(name="remote")
    assert remote.refresh_error == ""
    assert ToolsetTool.objects.filter(toolset=remote, name="echo").exists()


@pytest.mark.parametrize(
    ("task_support", "reason"),
    [("required", TASK_ONLY), ("optional", ""), ("forbidden", ""), (None, "")],
)
def test_only_task_only_tools_are_left_out(task_support: str | None, reason: str) -> None:
    toolset = Toolset(name="t", kind="http")
    listing = clean_listing(toolset, [{"name": "research", "task_support": task_support}])
    assert listing.tools["research"]["unsupported"] == reason


def test_a_tool_that_becomes_task_only_stops_being_offered(
    staff_admin: Any, user: Any, chat_session: ChatSession
) -> None:
    toolset = services.toolset_create(user=staff_admin, name="remote", kind="http", url=UNREACHABLE)
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=[{"name": "research"}])
    services.session_set_toolsets(session_id=chat_session.pk, toolset_ids=[toolset.pk], user=user)
    assert [t.name for t in selectors.session_tools(session_id=chat_session.pk)] == ["research"]
    services.toolset_refresh_tools(
        toolset_id=toolset.pk, tools=[{"name": "research", "task_support": "required"}]
    )
    assert selectors.session_tools(session_id=chat_session.pk) == []
