"""What a refresh takes from a server is bounded: how many tools, how large one
tool's schema, how large all of them together. A server over a toolset limit is refused with
a clear message and nothing changes; a tool over the per-tool limit is left out and named."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset, ToolsetTool
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


def listed_tool(name: str, *, schema_bytes: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    if schema_bytes:
        schema["properties"]["q"]["description"] = "d" * schema_bytes
    return {"name": name, "description": f"{name}.", "input_schema": schema, "read_only": True}


@pytest.fixture
def toolset(staff_admin: Any) -> Toolset:
    created = services.toolset_create(
        user=staff_admin, name="big", kind="http", url="http://x.test"
    )
    services.toolset_refresh_tools(toolset_id=created.pk, tools=[listed_tool("first")])
    return created


def names(toolset: Toolset) -> list[str]:
    """The tools the toolset offers now."""
    tools = ToolsetTool.objects.filter(toolset=toolset, available=True)
    return sorted(tools.values_list("name", flat=True))


def test_a_server_listing_too_many_tools_is_refused_and_nothing_changes(
    toolset: Toolset, settings: Any
) -> None:
    assert settings.PLANBOARD_TOOLSET_MAX_TOOLS == 200  # the default
    listing = [listed_tool(f"t{n}") for n in range(201)]
    with pytest.raises(PlanError) as refused:
        services.toolset_refresh_tools(toolset_id=toolset.pk, tools=listing)
    assert refused.value.code == "toolset_too_large"
    assert "more than 200 tools" in refused.value.message
    assert "PLANBOARD_TOOLSET_MAX_TOOLS" in refused.value.message
    assert names(toolset) == ["first"]
    stored = Toolset.objects.get(pk=toolset.pk)
    assert [t["name"] for t in stored.tools_cache] == ["first"]
    # Exactly at the limit is fine.
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=listing[:200])
    assert len(names(toolset)) == 200


def test_a_tool_with_an_oversized_schema_is_left_out_and_named(
    toolset: Toolset, settings: Any
) -> None:
    assert settings.PLANBOARD_TOOL_SCHEMA_MAX_BYTES == 65536  # the default
    result = services.toolset_refresh_tools(
        toolset_id=toolset.pk,
        tools=[listed_tool("first"), listed_tool("huge", schema_bytes=70_000)],
    )
    assert result.too_large == ["huge"] and result.added == []
    assert names(toolset) == ["first"]
    # Nothing of it is kept anywhere: the cached listing holds only what was taken.
    stored = Toolset.objects.get(pk=toolset.pk)
    assert len(json.dumps(stored.tools_cache)) < 1000


def test_all_schemas_together_are_bounded_too(toolset: Toolset, settings: Any) -> None:
    settings.PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES = 100_000
    listing = [listed_tool(f"t{n}", schema_bytes=30_000) for n in range(4)]
    with pytest.raises(PlanError) as refused:
        services.toolset_refresh_tools(toolset_id=toolset.pk, tools=listing)
    assert refused.value.code == "toolset_too_large"
    assert "PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES" in refused.value.message
    assert names(toolset) == ["first"]
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=listing[:3])
    assert names(toolset) == ["t0", "t1", "t2"]


def test_the_api_and_the_admin_say_why(
    toolset: Toolset, staff_admin: Any, settings: Any, admin_client: Client
) -> None:
    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 3
    settings.PLANBOARD_TOOL_DISCOVERER = "tests.planboard.test_toolset_limits.five_tools"
    client = api_client_for(staff_admin)
    response = client.post(f"/api/toolsets/{toolset.pk}/refresh/")
    assert response.status_code == 400
    assert response.json()["code"] == "toolset_too_large"
    assert "more than 3 tools" in response.json()["error"]

    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 10
    settings.PLANBOARD_TOOL_SCHEMA_MAX_BYTES = 5000
    response = client.post(f"/api/toolsets/{toolset.pk}/refresh/")
    assert response.status_code == 200 and response.json()["too_large"] == ["t4"]

    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 3
    page = admin_client.post(
        "/admin/planboard/toolset/",
        {"action": "refresh_tools", "_selected_action": [str(toolset.pk)]},
        follow=True,
    ).content.decode()
    assert "more than 3 tools" in page
    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 10
    page = admin_client.post(
        "/admin/planboard/toolset/",
        {"action": "refresh_tools", "_selected_action": [str(toolset.pk)]},
        follow=True,
    ).content.decode()
    assert "1 too large" in page


def five_tools(toolset: Toolset) -> list[dict[str, Any]]:
    """A discoverer: four small tools and one whose schema is 8 KB."""
    return [listed_tool(f"t{n}") for n in range(4)] + [listed_tool("t4", schema_bytes=8000)]
