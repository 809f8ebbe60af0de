"""The toolset admin writes through the services and never shows a secret value."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from planboard import services
from planboard.models import Toolset, ToolsetTool
from tests.support.admin import tool_row, toolset_form

pytestmark = pytest.mark.django_db

SECRET = "sk-live-topsecret-42"


def form(**fields: str | None) -> dict[str, Any]:
    """The add form for an HTTP toolset with a secret header."""
    return toolset_form(**{"headers": f'{{"Authorization": "{SECRET}"}}', **fields})


def test_create_and_edit_keep_secrets_unseen(admin_client: Client) -> None:
    response = admin_client.post("/admin/planboard/toolset/add/", form())
    assert response.status_code == 302, response.content.decode()[-2000:]
    toolset = Toolset.objects.get(name="files")
    assert toolset.headers == {"Authorization": SECRET}

    page = admin_client.get(f"/admin/planboard/toolset/{toolset.pk}/change/").content.decode()
    assert SECRET not in page and "Authorization" in page and "********" in page

    # Left masked: kept. A new header added, the URL's path changed (the same server: a new
    # host would drop the stored secrets, see test_toolset_destinations.py).
    masked = '{"Authorization": "********", "X-Team": "blue"}'
    edit = form(name=None, headers=masked, url="https://tools.example.com/v2/mcp")
    assert (
        admin_client.post(f"/admin/planboard/toolset/{toolset.pk}/change/", edit).status_code == 302
    )
    toolset.refresh_from_db()
    assert toolset.headers == {"Authorization": SECRET, "X-Team": "blue"}
    assert toolset.url == "https://tools.example.com/v2/mcp"
    # A line removed: the secret is deleted.
    edit = form(name=None, headers='{"X-Team": "blue"}')
    admin_client.post(f"/admin/planboard/toolset/{toolset.pk}/change/", edit)
    toolset.refresh_from_db()
    assert toolset.headers == {"X-Team": "blue"}


def test_the_services_rules_show_on_the_form(admin_client: Client) -> None:
    response = admin_client.post("/admin/planboard/toolset/add/", form(url="ftp://x.test"))
    assert response.status_code == 200 and "http(s) URL" in response.content.decode()
    response = admin_client.post("/admin/planboard/toolset/add/", form(headers="[1, 2]"))
    assert response.status_code == 200 and "JSON object" in response.content.decode()
    assert not Toolset.objects.exclude(kind=Toolset.Kind.BUILTIN).exists()


def test_staff_override_a_tools_policy_inline(admin_client: Client, staff: Any) -> None:
    toolset = services.toolset_create(
        user=staff, name="files", kind="http", url="https://tools.example.com/mcp"
    )
    services.toolset_refresh_tools(
        toolset_id=toolset.pk, tools=[{"name": "write", "input_schema": {"type": "object"}}]
    )
    tool = ToolsetTool.objects.get(toolset=toolset)
    data = toolset_form(name=None, tools=(tool_row(tool, policy="auto"),))
    response = admin_client.post(f"/admin/planboard/toolset/{toolset.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    tool.refresh_from_db()
    assert (tool.policy, tool.policy_overridden) == ("auto", True)
