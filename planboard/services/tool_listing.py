"""What a toolset's server can change by listing its tools, and what it cannot.

A refresh takes a bounded listing (`clean_listing`): at most `PLANBOARD_TOOLSET_MAX_TOOLS`
tools, each tool's description and input schema at most `PLANBOARD_TOOL_SCHEMA_MAX_BYTES`
(a larger one is left out and named), all of them together at most
`PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES`. Past a toolset limit the refresh is refused and
nothing changes: keeping "the first N" would let the server's ordering decide which tools
exist, and offering megabytes of schemas to a model at every step is what the limits stop.

A listing can make Planboard more careful, never less (`apply_listing`): a policy only gets
stricter (auto < ask < never), and a tool whose description, schema or read-only claim changed
since a person set its policy is flagged `needs_review` and asks until a person looks again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from planboard import workspace
from planboard.exceptions import PlanError
from planboard.models import TEXT_MAX, TOOL_NAME_MAX, Toolset, ToolsetTool
from planboard.pgtext import without_nul

# Model providers take function names of 1-64 characters from [A-Za-z0-9_-]; the model sees
# `<toolset>__<tool>`, so a tool whose full name breaks this is not offered.
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SEPARATOR = "__"


def namespaced(toolset_name: str, tool: str) -> str:
    return f"{toolset_name}{SEPARATOR}{tool}"


def max_tools() -> int:
    return int(getattr(settings, "PLANBOARD_TOOLSET_MAX_TOOLS", 200))


def tool_schema_max_bytes() -> int:
    return int(getattr(settings, "PLANBOARD_TOOL_SCHEMA_MAX_BYTES", 65536))


def toolset_schema_max_bytes() -> int:
    return int(getattr(settings, "PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES", 524288))


def listing_bytes(description: Any, input_schema: Any) -> int:
    """How much a listed tool weighs in a model's request: its description (as much of it as
    is kept) and input schema, as UTF-8 JSON."""
    text = description[:TEXT_MAX] if isinstance(description, str) else ""
    schema = json.dumps(input_schema, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8")) + len(schema.encode("utf-8"))


@dataclass
class Listing:
    """The tools a refresh takes (by name, cleaned), and the ones it leaves out."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Names no model provider accepts as `<toolset>__<tool>`.
    skipped: list[str] = field(default_factory=list)
    # Tools whose description and schema are over `PLANBOARD_TOOL_SCHEMA_MAX_BYTES`.
    too_large: list[str] = field(default_factory=list)


def clean_listing(toolset: Toolset, items: Iterable[Mapping[str, Any]]) -> Listing:
    """The listing a refresh may store, or `PlanError(code="toolset_too_large")` saying which
    limit the server is over (read item by item: a huge listing is refused early)."""
    listing = Listing()
    total = 0
    for count, item in enumerate(items, start=1):
        if count > max_tools():
            raise PlanError(
                f"Toolset '{toolset.name}': the server lists more than {max_tools()} tools, "
                "more than a model should be offered (PLANBOARD_TOOLSET_MAX_TOOLS). Nothing "
                "was changed: use a server, or a configuration of it, that offers fewer tools, "
                "or raise the limit.",
                code="toolset_too_large",
            )
        if item.get("too_large") is True and isinstance(item.get("name"), str):
            # The discoverer measured it and kept nothing of it (`listing.discover_tools`).
            listing.too_large.append(str(item["name"])[:TOOL_NAME_MAX])
            continue
        clean = _clean_discovered(item)
        if clean is None:
            continue
        name = clean["name"]
        if not FUNCTION_NAME.match(namespaced(toolset.name, name)):
            listing.skipped.append(name)
            continue
        size = listing_bytes(clean["description"], clean["input_schema"])
        if size > tool_schema_max_bytes():
            listing.too_large.append(name)
            continue
        total += size
        if total > toolset_schema_max_bytes():
            raise PlanError(
                f"Toolset '{toolset.name}': its tools' descriptions and input schemas add up "
                f"to more than {toolset_schema_max_bytes()} bytes "
                "(PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES), too much to offer a model at every "
                "step. Nothing was changed: use a server, or a configuration of it, that "
                "offers fewer tools, or raise the limit.",
                code="toolset_too_large",
            )
        listing.tools[name] = clean
    return listing


def _clean_discovered(item: Mapping[str, Any]) -> dict[str, Any] | None:
    name = item.get("name")
    if not isinstance(name, str) or not name or len(name) > TOOL_NAME_MAX:
        return None
    schema = item.get("input_schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    description = item.get("description")
    return {
        "name": name,
        "description": without_nul(description if isinstance(description, str) else "")[:TEXT_MAX],
        "input_schema": without_nul(schema),
        "read_only": item.get("read_only") is True,
        "unsupported": TASK_ONLY if item.get("task_support") == "required" else "",
        "reads_resources": False,
    }


# A 2025-11-25 server's task-only tool would fail on every call: that revision's task answer
# to `tools/call` is refused by the MCP SDK's client (`agents.mcp.tasks`), so the tool is
# listed for staff but never offered. At 2026-07-28 tasks are the tasks extension's, and a
# discoverer lists such tools as `optional`.
TASK_ONLY = (
    "The server runs this tool only as an MCP task of the 2025-11-25 revision "
    "(execution.taskSupport: required), which Planboard cannot call; it is not offered to the "
    "agent. Servers speaking 2026-07-28 run tasks through the tasks extension, which Planboard "
    "follows."
)


# --- what a listing may change ---------------------------------------------------------------


def default_policy(read_only: bool) -> str:
    """Read-only tools run without asking; anything that may change the world asks first."""
    return ToolsetTool.Policy.AUTO if read_only else ToolsetTool.Policy.ASK


def default_policy_of(toolset: Toolset, tool: str, read_only: bool) -> str:
    """Built-in tools carry their own defaults (the workspace writes without asking)."""
    if toolset.kind == Toolset.Kind.BUILTIN:
        return workspace.default_policy(tool) or default_policy(read_only)
    return default_policy(read_only)


# How careful each policy is: a refresh may move a tool up this scale, never down.
_CAUTION: dict[str, int] = {
    ToolsetTool.Policy.AUTO.value: 0,
    ToolsetTool.Policy.ASK.value: 1,
    ToolsetTool.Policy.NEVER.value: 2,
}


def stricter(*policies: str) -> str:
    """The most careful of `policies` (auto < ask < never)."""
    return max(policies, key=lambda policy: _CAUTION.get(policy, len(_CAUTION)))


def tool_fingerprint(tool: ToolsetTool) -> str:
    """A hash of what a person judges a tool by: its description, input schema and
    read-only claim (recorded when a person sets its policy)."""
    seen = {
        "description": tool.description,
        "input_schema": tool.input_schema,
        "read_only": tool.read_only,
    }
    canonical = json.dumps(seen, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def trusted_read_only(tool: ToolsetTool) -> bool:
    """Whether a call of the tool may count as read-only (and so be repeated after a crash):
    the server says so, and nothing about the tool changed since a person last looked."""
    return tool.read_only and not tool.needs_review


def apply_listing(toolset: Toolset, tool: ToolsetTool, clean: dict[str, Any]) -> None:
    """What the server lists now, applied to a known tool. The server cannot make Planboard
    less careful: a policy only gets stricter (a tool relabelled read-only keeps asking), and
    a tool that changed since a person set its policy (`policy_fingerprint`) is flagged
    `needs_review` and asks at least, until a person sets its policy again."""
    if tool.policy_overridden and not tool.policy_fingerprint:
        # Set before fingerprints existed: what it reads as now is what the person saw last.
        tool.policy_fingerprint = tool_fingerprint(tool)
    was_read_only = tool.read_only
    for key, value in clean.items():
        setattr(tool, key, value)
    tool.available = True
    if tool.policy_fingerprint:
        changed = tool_fingerprint(tool) != tool.policy_fingerprint
    else:
        # Nobody has looked at it: only a new read-only claim is worth a person's look.
        changed = tool.read_only and not was_read_only
    tool.needs_review = tool.needs_review or changed
    if not tool.policy_overridden:
        tool.policy = stricter(tool.policy, default_policy_of(toolset, tool.name, tool.read_only))
    if tool.needs_review:
        tool.policy = stricter(tool.policy, ToolsetTool.Policy.ASK)


# --- resources, resource templates and prompts ----------------------------------------------------
#
# What a server lists besides tools is shown to people (attach a resource, pick a prompt) and,
# for resources, named to the agent through `RESOURCE_TOOL`. It is kept bounded like a tool
# listing, but a long list is cut rather than refused: nothing in it runs by itself, and a
# resource not kept simply cannot be attached or read.

CATALOG_KINDS = ("resources", "templates", "prompts")
# Characters kept of each text field of a listed resource or prompt.
CATALOG_TEXT_MAX = {"uri": 2000, "uri_template": 2000, "name": 200, "title": 200}
CATALOG_DESCRIPTION_MAX = 1000
PROMPT_ARGUMENTS_MAX = 20

# Planboard's own tool on every toolset whose server lists resources: `<toolset>__read_resource`.
# A server tool of the same name keeps the name (and Planboard's is not added).
RESOURCE_TOOL = "read_resource"
RESOURCE_TOOL_DESCRIPTION = (
    "Read one of the resources this toolset's server offers (MCP resources/read). Pass its "
    "exact `uri`; the resources offered are listed below. The contents come back as data "
    "from that server."
)
RESOURCE_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "uri": {"type": "string", "description": "The resource's URI, exactly as listed."}
    },
    "required": ["uri"],
}


def max_catalog_items() -> int:
    """Resources, resource templates and prompts kept of one toolset (each)."""
    return int(getattr(settings, "PLANBOARD_TOOLSET_MAX_CATALOG_ITEMS", 200))


def _text(value: Any, limit: int) -> str:
    return without_nul(value if isinstance(value, str) else "")[:limit]


def _clean_entry(kind: str, item: Mapping[str, Any]) -> dict[str, Any] | None:
    key = {"resources": "uri", "templates": "uri_template", "prompts": "name"}[kind]
    ident = item.get(key)
    if not isinstance(ident, str) or not ident or len(ident) > CATALOG_TEXT_MAX.get(key, 200):
        return None  # an entry that cannot be named exactly cannot be used
    clean: dict[str, Any] = {
        field_name: _text(item.get(field_name), limit)
        for field_name, limit in CATALOG_TEXT_MAX.items()
        if field_name in item or field_name == key
    }
    clean["description"] = _text(item.get("description"), CATALOG_DESCRIPTION_MAX)
    if kind != "prompts":
        clean["mime_type"] = _text(item.get("mime_type"), 100)
    if kind == "resources":
        size = item.get("size")
        clean["size"] = size if isinstance(size, int) and size >= 0 else None
    if kind == "prompts":
        arguments = []
        for argument in list(item.get("arguments") or [])[:PROMPT_ARGUMENTS_MAX]:
            if not isinstance(argument, Mapping):
                continue
            name = _text(argument.get("name"), 100)
            if name:
                arguments.append(
                    {
                        "name": name,
                        "description": _text(argument.get("description"), 300),
                        "required": argument.get("required") is True,
                    }
                )
        clean["arguments"] = arguments
    return clean


def clean_catalog(found: Mapping[str, Any] | None) -> dict[str, Any]:
    """A server's resources, templates and prompts as stored (`Toolset.catalog`): at most
    `max_catalog_items()` of each (the first ones; the kind is named in `truncated` when more
    were listed), text fields cut, entries without a usable URI or name dropped, duplicates
    dropped."""
    catalog: dict[str, Any] = {kind: [] for kind in CATALOG_KINDS}
    truncated: list[str] = []
    for kind in CATALOG_KINDS:
        items = (found or {}).get(kind) or []
        seen: set[str] = set()
        for item in items:
            if not isinstance(item, Mapping):
                continue
            clean = _clean_entry(kind, item)
            if clean is None:
                continue
            ident = clean.get("uri") or clean.get("uri_template") or clean["name"]
            if ident in seen:
                continue
            if len(catalog[kind]) >= max_catalog_items():
                truncated.append(kind)
                break
            seen.add(ident)
            catalog[kind].append(clean)
    catalog["truncated"] = truncated
    return catalog


def resource_tool_listing() -> dict[str, Any]:
    """`RESOURCE_TOOL` as a refresh stores it (read-only: it runs without asking by default)."""
    return {
        "name": RESOURCE_TOOL,
        "description": RESOURCE_TOOL_DESCRIPTION,
        "input_schema": RESOURCE_TOOL_SCHEMA,
        "read_only": True,
        "unsupported": "",
        "reads_resources": True,
    }
