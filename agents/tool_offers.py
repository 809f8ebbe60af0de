"""What the model is offered of a session's external tools (MCP servers and the built-in
workspace): each as `<toolset>__<tool>` with the server's own input schema, and whether its
calls wait for a person. `agents.external_tools` handles the calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import markers
from planboard import selectors
from planboard.models import ToolCall, Toolset, ToolsetTool
from planboard.services.tool_listing import SEPARATOR, namespaced

# Tool descriptions come from servers: long ones are cut to keep requests small.
DESCRIPTION_MAX = 1000
ASKS_NOTE = " (Each call waits for a person's approval before it runs.)"
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def is_external(name: str) -> bool:
    return SEPARATOR in name


@dataclass(frozen=True)
class Offered:
    """A session's external tool as the model is offered it."""

    name: str  # <toolset>__<tool>
    tool: ToolsetTool
    asks: bool  # each call waits for a person's approval


def offered_tools(
    *,
    session_id: int,
    within: frozenset[int] | None = None,
    allowed: set[tuple[int, str]] | None = None,
    tools: list[ToolsetTool] | None = None,
) -> list[Offered]:
    """The session's enabled tools, limited to the toolsets `within` when the acting profile
    names some. `allowed`: the always-allowed (toolset, tool) pairs, and `tools`: the
    session's tools, if already read (`selectors.session_tools_and_call_flags`)."""
    if allowed is None:
        allowed = set(
            ToolCall.objects.filter(session_id=session_id, always_allow=True).values_list(
                "toolset_id", "tool"
            )
        )
    return [
        Offered(
            name=namespaced(t.toolset.name, t.name),
            tool=t,
            # "Always allow" was said of the tool as it was: one changed since asks again.
            asks=t.policy == ToolsetTool.Policy.ASK
            and (t.needs_review or (t.toolset_id, t.name) not in allowed),
        )
        for t in (tools if tools is not None else selectors.session_tools(session_id=session_id))
        if within is None or t.toolset_id in within
    ]


def schemas(offered: list[Offered]) -> list[dict[str, Any]]:
    """The offered tools in the format litellm takes as `tools=`."""
    result = []
    for item in offered:
        # Servers write descriptions and schemas: every string in them is model-facing text
        # (names need nothing: a `<toolset>__<tool>` name is [A-Za-z0-9_-] only).
        description = markers.neutralize_hint_tags(item.tool.description or "")[:DESCRIPTION_MAX]
        if item.tool.reads_resources:
            description += resources_listed(item.tool.toolset)
        if item.asks:
            description += ASKS_NOTE
        schema = item.tool.input_schema
        result.append(
            {
                "type": "function",
                "function": {
                    "name": item.name,
                    "description": description.strip() or item.name,
                    "parameters": markers.neutralize_data(schema)
                    if isinstance(schema, dict) and schema
                    else _EMPTY_SCHEMA,
                },
            }
        )
    return result


# How many of a toolset's resources (and templates) `read_resource`'s description names.
RESOURCES_NAMED = 50


def resources_listed(toolset: Toolset) -> str:
    """The resources (and templates) `read_resource` may read, for its description: the
    server's words, defused like every description."""
    catalog = toolset.catalog or {}
    lines = []
    for resource in (catalog.get("resources") or [])[:RESOURCES_NAMED]:
        label = resource.get("title") or resource.get("name") or ""
        lines.append(f"- {resource.get('uri')}" + (f" ({label[:100]})" if label else ""))
    for template in (catalog.get("templates") or [])[:RESOURCES_NAMED]:
        lines.append(f"- {template.get('uri_template')} (a template: fill in the braces)")
    more = len(catalog.get("resources") or []) - RESOURCES_NAMED
    if more > 0:
        lines.append(f"- … and {more} more")
    return markers.neutralize_hint_tags("\nResources:\n" + "\n".join(lines)) if lines else ""
