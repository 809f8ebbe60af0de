"""The toolset admin writes through the services and never shows a secret value."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from planboard import services
from planboard.models import Toolset, ToolsetTool

pytestmark = pytest.mark.django_db

SECRET = "sk-live-topsecret-42"


@pytest.fixture
def admin_client_(django_user_model: Any) -> Client:
    admin = django_user_model.objects.create_superuser("boss", "boss@example.com", "pw")
    client = Client()
    client.force_login(admin)
    return client


def form(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "files",
        "title": "Files",
        "kind": "http",
        "command": "",
        "args": "[]",
        "env": "",
        "url": "https://tools.example.com/mcp",
        "headers": f'{{"Authorization": "{SECRET}"}}',
        "enabled": "on",
        "tools-TOTAL_FORMS": "0",
        "tools-INITIAL_FORMS": "0",
        "tools-MIN_NUM_FORMS": "0",
        "tools-MAX_NUM_FORMS": "1000",
    }
    data.update(overrides)
    return data


def test_create_and_edit_keep_secrets_unseen(admin_client_: Client) -> None:
    response = admin_client_.post("/admin/planboard/toolset/add/", form())
    assert response.status_code == 302, response.content.decode()[-2000:]
    toolset = Toolset.objects.get(name="files")
    assert toolset.headers == {"Authorization": SECRET}

    page = admin_client_.get(f"/admin/planboard/toolset/{toolset.pk}/change/").content.decode()
    assert SECRET not in page and "Authorization" in page and "********" in page

    # Left masked: kept. A new header added, the URL's path changed (the same server: a new
    # host would drop the stored secrets, see test_toolset_destinations.py).
    masked = '{"Authorization": "********", "X-Team": "blue"}'
    edit = form(headers=masked, url="https://tools.example.com/v2/mcp")
    del edit["name"]
    assert (
        admin_client_.post(f"/admin/planboard/toolset/{toolset.pk}/change/", edit).status_code
        == 302
    )
    toolset.refresh_from_db()
    assert toolset.headers == {"Authorization": SECRET, "X-Team": "blue"}
    assert toolset.url == "https://tools.example.com/v2/mcp"
    # A line removed: the secret is deleted.
    edit = form(headers='{"X-Team": "blue"}')
    del edit["name"]
    admin_client_.post(f"/admin/planboard/toolset/{toolset.pk}/change/", edit)
    toolset.refresh_from_db()
    assert toolset.headers == {"X-Team": "blue"}


def test_the_services_rules_show_on_the_form(admin_client_: Client) -> None:
    response = admin_client_.post("/admin/planboard/toolset/add/", form(url="ftp://x.test"))
    assert response.status_code == 200 and "http(s) URL" in response.content.decode()
    response = admin_client_.post("/admin/planboard/toolset/add/", form(headers="[1, 2]"))
    assert response.status_code == 200 and "JSON object" in response.content.decode()
    assert not Toolset.objects.exclude(kind=Toolset.Kind.BUILTIN).exists()


def test_staff_override_a_tools_policy_inline(admin_client_: Client, staff: Any) -> None:
    toolset = services.toolset_create(
        user=staff, name="files", kind="http", url="https://tools.example.com/mcp"
    )
    services.toolset_refresh_tools(
        toolset_id=toolset.pk, tools=[{"name": "write", "input_schema": {"type": "object"}}]
    )
    tool = ToolsetTool.objects.get(toolset=toolset)
    data = form(
        **{
            "tools-TOTAL_FORMS": "1",
            "tools-INITIAL_FORMS": "1",
            "tools-0-id": str(tool.pk),
            "tools-0-toolset": str(toolset.pk),
            "tools-0-policy": "auto",
        },
        headers="",
    )
    del data["name"]
    response = admin_client_.post(f"/admin/planboard/toolset/{toolset.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    tool.refresh_from_db()
    assert (tool.policy, tool.policy_overridden) == ("auto", True)
