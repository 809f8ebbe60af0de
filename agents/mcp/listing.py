"""What a toolset's server offers: its tools (`discover_tools`, the refresh's discoverer:
`settings.PLANBOARD_TOOL_DISCOVERER`), resources, resource templates and prompts, listed on one
connection, each listing bounded (`planboard.services.tool_listing`'s limits; a server that
pages forever is cut off). `listing_digest` tells whether an open session's listing changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from agents.mcp.connection import used_once
from agents.mcp.oauth import oauth_for
from agents.mcp.outcome import Failure
from agents.mcp.transport import run_sync
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset
from planboard.services.tool_listing import (
    listing_bytes,
    max_catalog_items,
    max_tools,
    tool_schema_max_bytes,
    toolset_schema_max_bytes,
)
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)

# Pages of a listing followed at most (a server that pages forever is cut off).
MAX_TOOL_PAGES = 20


def discover_tools(toolset: Toolset) -> list[dict[str, Any]]:
    """The tools the server lists: `{name, description, input_schema, read_only}` each, or
    `{name, too_large: True}` for a tool over `PLANBOARD_TOOL_SCHEMA_MAX_BYTES` (its text is
    not kept). Listing stops once the server is over a toolset limit (one tool more than
    `PLANBOARD_TOOLSET_MAX_TOOLS`, or more than `PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES`): the
    refresh refuses it then, and nothing more needs to be read."""

    oauth = oauth_for(toolset)

    async def listing_all(session: Client) -> Discovered:
        found = Discovered(await _listing(session))
        found.catalog = await _catalog(session)
        return found

    try:
        found = run_sync(lambda: used_once(toolset, listing_all, oauth=oauth))
    except Failure as failure:
        raise PlanError(failure.message, code="toolset_unreachable") from None
    finally:
        if oauth is not None:
            oauth.store_changed()
    for item in found:
        item.pop("weight", None)
    return found


class Discovered(list[dict[str, Any]]):
    """What `discover_tools` found: the tools (the list itself), and the server's resources,
    resource templates and prompts (`catalog`, as `_catalog` reads them; a discoverer that
    returns a plain list lists none). One connection lists them all."""

    catalog: dict[str, list[dict[str, Any]]]


async def _catalog(session: Client) -> dict[str, list[dict[str, Any]]]:
    """The server's resources, resource templates and prompts, as far as it offers them
    (its capabilities say so) and at most one item past `tool_listing.max_catalog_items()`
    each (the service keeps the first ones). A server that fails to list one of them lists
    none of it: its tools still count."""
    capabilities = session.server_capabilities
    found: dict[str, list[dict[str, Any]]] = {"resources": [], "templates": [], "prompts": []}
    if capabilities is None:
        return found
    keep = max_catalog_items() + 1
    if capabilities.resources is not None:
        found["resources"] = await _pages(session.list_resources, "resources", keep, _resource)
        found["templates"] = await _pages(
            session.list_resource_templates, "resource_templates", keep, _template
        )
    if capabilities.prompts is not None:
        found["prompts"] = await _pages(session.list_prompts, "prompts", keep, _prompt)
    return found


async def _pages(
    lister: Callable[..., Awaitable[Any]],
    field_name: str,
    keep: int,
    shape: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        for _ in range(MAX_TOOL_PAGES):
            page = await lister(cursor=cursor)
            for item in getattr(page, field_name):
                found.append(shape(item))
                if len(found) >= keep:
                    return found
            cursor = page.next_cursor
            if not cursor:
                break
    except MCPError:
        logger.info("listing %s failed", field_name, exc_info=True)
        return []
    return found


def _resource(item: Any) -> dict[str, Any]:
    return {
        "uri": str(item.uri),
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "mime_type": item.mime_type or "",
        "size": item.size,
    }


def _template(item: Any) -> dict[str, Any]:
    return {
        "uri_template": str(item.uri_template),
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "mime_type": item.mime_type or "",
    }


def _prompt(item: Any) -> dict[str, Any]:
    return {
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "arguments": [
            {
                "name": argument.name,
                "description": argument.description or "",
                "required": bool(argument.required),
            }
            for argument in item.arguments or []
        ],
    }


async def _listing(session: Client) -> list[dict[str, Any]]:
    """The server's tools as `discover_tools` describes them (with their `weight`)."""
    found: list[dict[str, Any]] = []
    weight = 0
    cursor: str | None = None
    # At 2026-07-28 tasks are the tasks extension's, which every call declares (`tasks`).
    extension = session.protocol_version in MODERN_PROTOCOL_VERSIONS
    for _ in range(MAX_TOOL_PAGES):
        page = await session.list_tools(cursor=cursor)
        for tool in page.tools:
            found.append(_listed(tool, tasks_extension=extension))
            weight += found[-1].get("weight", 0)
            if len(found) > max_tools() or weight > toolset_schema_max_bytes():
                return found
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def listing_digest(session: Client) -> str:
    """A hash of what an open session's server lists now, tools, resources and prompts (to
    tell whether it changed)."""
    found = {"tools": await _listing(session), **(await _catalog(session))}
    return hashlib.sha256(json.dumps(found, sort_keys=True, default=str).encode()).hexdigest()


def _listed(tool: Any, *, tasks_extension: bool = False) -> dict[str, Any]:
    """One tool of a listing (and its `weight` in bytes, counted towards the toolset's).
    `task_support` is the server's `execution.taskSupport`; on a session that speaks the tasks
    extension (`tasks_extension`) a task-only tool is called like any other (the server makes
    the task), so it is `optional` there."""
    description = tool.description or ""
    schema = dict(tool.input_schema or {})
    weight = listing_bytes(description, schema)
    if weight > tool_schema_max_bytes():
        return {"name": tool.name, "too_large": True}
    annotations = tool.annotations
    execution = tool.execution
    return {
        "name": tool.name,
        "description": description,
        "input_schema": schema,
        "read_only": bool(annotations and annotations.read_only_hint),
        "task_support": _task_support(execution, tasks_extension),
        "weight": weight,
    }


def _task_support(execution: Any, tasks_extension: bool) -> str:
    support = (execution.task_support if execution else None) or "forbidden"
    return "optional" if tasks_extension and support == "required" else support


Refresher = Callable[[int], Awaitable[None]]


async def refresh_in_thread(toolset_id: int) -> None:
    """The toolset's refresh, on a thread of its own (it asks the server and writes)."""

    def refresh() -> None:
        try:
            services.toolset_discover(toolset_id=toolset_id)
        finally:
            close_thread_connection()

    await asyncio.to_thread(refresh)
