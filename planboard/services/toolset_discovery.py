"""What a toolset's server is asked: the tools it lists now (`toolset_refresh_tools`, and
`toolset_discover` right after a create or a change of how it is reached) and a prompt's text
for the composer (`toolset_prompt_get`).

No transaction is held while a server is asked anything: discovery happens before the
transaction that stores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from planboard import selectors, workspace
from planboard.exceptions import PlanError
from planboard.models import TEXT_MAX, Toolset, ToolsetTool
from planboard.pgtext import without_nul
from planboard.services.tool_listing import (
    RESOURCE_TOOL,
    apply_listing,
    clean_catalog,
    clean_listing,
    default_policy_of,
    resource_tool_listing,
)


@dataclass
class Refreshed:
    toolset: Toolset
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    # Tools whose `<toolset>__<tool>` name no model provider would accept.
    skipped: list[str] = field(default_factory=list)
    # Tools whose description and schema are over PLANBOARD_TOOL_SCHEMA_MAX_BYTES.
    too_large: list[str] = field(default_factory=list)


def toolset_refresh_tools(
    *, toolset_id: int, tools: Iterable[Mapping[str, Any]] | None = None
) -> Refreshed:
    """Store the tools a toolset's server lists now (asked through
    `settings.PLANBOARD_TOOL_DISCOVERER` unless `tools` are given; a built-in toolset lists
    what this version of Planboard ships), within the limits of `tool_listing.clean_listing`
    (past a toolset limit: `PlanError`, nothing changes). A tool the server no longer lists
    is kept, unavailable, so a staff override survives its return. A listing only makes
    policies stricter (`tool_listing.apply_listing`)."""
    # The previous listing is never read: it is replaced whole.
    toolset = Toolset.objects.defer("tools_cache").filter(pk=toolset_id).first()
    if toolset is None:
        raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
    if tools is None and toolset.kind == Toolset.Kind.BUILTIN:
        tools = workspace.TOOLS
    try:
        if tools is None:
            discover = import_string(settings.PLANBOARD_TOOL_DISCOVERER)
            tools = discover(toolset)  # outside any transaction: a server may be slow
        listing = clean_listing(toolset, tools)
        found_catalog = getattr(tools, "catalog", None)
        catalog = clean_catalog(found_catalog) if found_catalog is not None else None
    except PlanError as failure:
        # Kept for staff to see where the toolset is configured; the tools stay as they were.
        Toolset.objects.filter(pk=toolset_id).update(refresh_error=str(failure)[:TEXT_MAX])
        raise
    result = Refreshed(toolset=toolset, skipped=listing.skipped, too_large=listing.too_large)
    found = listing.tools
    with transaction.atomic():
        toolset = Toolset.objects.select_for_update().defer("tools_cache").get(pk=toolset_id)
        result.toolset = toolset
        if catalog is not None:  # a listing without one leaves the stored one as it was
            toolset.catalog = catalog
        if (toolset.catalog or {}).get("resources") and RESOURCE_TOOL not in found:
            found[RESOURCE_TOOL] = resource_tool_listing()
        existing = {t.name: t for t in ToolsetTool.objects.filter(toolset=toolset)}
        for name, clean in found.items():
            tool = existing.get(name)
            if tool is None:
                ToolsetTool.objects.create(
                    toolset=toolset,
                    policy=default_policy_of(toolset, name, clean["read_only"]),
                    **clean,
                )
                result.added.append(name)
                continue
            apply_listing(toolset, tool, clean)
            tool.save()
        for name, tool in existing.items():
            if name not in found and tool.available:
                tool.available = False
                tool.save(update_fields=["available"])
                result.removed.append(name)
        # The tools taken, as cleaned: within the limits, whatever the server sent.
        # (Planboard's own resource reader is not the server's.)
        toolset.tools_cache = [
            {k: v for k, v in t.items() if k != "reads_resources"}
            for t in found.values()
            if not t.get("reads_resources")
        ]
        toolset.refreshed_at = timezone.now()
        toolset.refresh_error = ""
        toolset.save(
            update_fields=["tools_cache", "catalog", "refreshed_at", "refresh_error", "updated_at"]
        )
    return result


# What changes where a toolset's server is, or how it is reached: its tools are asked again
# (a server may offer other tools when it is given roots).
_DISCOVERY_FIELDS = frozenset(
    {"kind", "command", "args", "env", "roots", "url", "headers", "enabled"}
)


def toolset_discover(*, toolset_id: int, changed: Iterable[str] | None = None) -> Refreshed | None:
    """List a toolset's tools right after it was created (`changed` None) or changed in one of
    `_DISCOVERY_FIELDS`, so it has tools without anyone pressing refresh. A server that cannot
    be reached, or lists too much, is not an error of the save: its reason is kept in
    `refresh_error` (shown with the toolset) and None returned. Disabled and built-in toolsets
    are not asked (a built-in one lists what ships with Planboard)."""
    if changed is not None and not _DISCOVERY_FIELDS.intersection(changed):
        return None
    toolset = Toolset.objects.only("kind", "enabled").filter(pk=toolset_id).first()
    if toolset is None or not toolset.enabled or toolset.kind == Toolset.Kind.BUILTIN:
        return None
    try:
        return toolset_refresh_tools(toolset_id=toolset_id)
    except PlanError:
        return None


# --- a server's prompts, for the composer ---------------------------------------------------------

PROMPT_ARGUMENT_MAX = 2000


def toolset_prompt_get(
    *, session_id: int, toolset_id: int, name: str, arguments: Any = None
) -> str:
    """The text of the prompt `name` of a toolset the session uses now, filled with
    `arguments` (strings by the prompt's argument names; the required ones given), asked of
    its server (`settings.PLANBOARD_TOOL_PROMPT_GETTER`, no transaction open, bounded by
    `PLANBOARD_TOOL_TIMEOUT`) with the session's credentials. Nothing is stored; `PlanError`
    for a prompt not offered, bad arguments, or a server that cannot give it."""
    prompt = selectors.session_prompt(session_id=session_id, toolset_id=toolset_id, name=name)
    if prompt is None:
        raise PlanError(
            f"Toolset {toolset_id} offers no prompt {str(name)[:100]!r} in this session.",
            code="unknown_prompt",
        )
    given = {} if arguments is None else arguments
    if not isinstance(given, dict):
        raise PlanError("'arguments' must be an object of text values.")
    known = {a["name"]: a for a in prompt.get("arguments") or []}
    clean: dict[str, str] = {}
    for key, value in given.items():
        if key not in known:
            raise PlanError(f"The prompt {name!r} takes no argument {str(key)[:100]!r}.")
        if not isinstance(value, str) or len(value) > PROMPT_ARGUMENT_MAX:
            raise PlanError(
                f"The argument {key!r} must be text of at most {PROMPT_ARGUMENT_MAX} characters."
            )
        if value.strip():
            clean[key] = without_nul(value)
    missing = [k for k, a in known.items() if a.get("required") and k not in clean]
    if missing:
        raise PlanError(f"The prompt {name!r} needs: {', '.join(missing)}.")
    toolset = Toolset.objects.filter(pk=toolset_id).first()
    called = selectors.toolset_as_called(toolset, session_id=session_id) if toolset else None
    if called is None:
        raise PlanError("The toolset is no longer usable in this session.", code="unknown_prompt")
    getter = import_string(settings.PLANBOARD_TOOL_PROMPT_GETTER)
    return str(getter(called, name, clean))
