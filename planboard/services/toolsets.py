"""External tools: toolsets (MCP servers) staff configure, the tools they offer with their
approval policies, and the ones a session enables. The calls made of them are recorded and
decided in `tool_calls`.

No transaction is held while a server is asked anything: discovery happens before the
transaction that stores it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from planboard import outbound, selectors, url_secrets, workspace
from planboard.exceptions import Forbidden, PlanError
from planboard.models import (
    NAME_MAX,
    TEXT_MAX,
    TOOLSET_NAME_MAX,
    SessionToolset,
    Team,
    Toolset,
    ToolsetCredential,
    ToolsetTool,
)
from planboard.pgtext import without_nul
from planboard.services._core import _clean_text, _lock_session, _publish_session
from planboard.services.tool_listing import (
    RESOURCE_TOOL,
    apply_listing,
    clean_catalog,
    clean_listing,
    default_policy_of,
    resource_tool_listing,
    tool_fingerprint,
)
from planboard.snapshots import serialize_session

TOOLSET_FIELDS = (
    "name",
    "title",
    "kind",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "enabled",
    "access",
    "auth",
    "roots",
    "teams",
    "tool_policies",
    "tool_signed_in_only",
)
_TOOLSET_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_))*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_MAX_ARGS = 100
_MAX_SECRETS = 50
_SECRET_MAX = 8000
_MAX_SESSION_TOOLSETS = 50
# What staff may change on a built-in toolset.
_BUILTIN_CHANGES = {"name", "title", "enabled", "tool_policies", "tool_signed_in_only"}


# --- validation -------------------------------------------------------------------------------


def _clean_name(value: Any) -> str:
    name = _clean_text(value, field="name", required=True, limit=TOOLSET_NAME_MAX)
    if not _TOOLSET_NAME.match(name) or name.endswith("_"):
        raise PlanError(
            "'name' may use only lowercase letters, digits, '-' and single '_' (the agent sees "
            "tools as <name>__<tool>), and must start with a letter or digit."
        )
    return name


def _clean_args(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise PlanError("'args' must be a list of strings.")
    if len(value) > _MAX_ARGS:
        raise PlanError(f"'args' may hold at most {_MAX_ARGS} arguments.")
    for arg in value:
        if "\x00" in arg or len(arg) > TEXT_MAX:
            raise PlanError(f"Each of 'args' must be text of at most {TEXT_MAX} characters.")
    return list(value)


def _clean_secrets(
    value: Any, *, field: str, pattern: re.Pattern[str], allow_removal: bool
) -> dict[str, str | None]:
    """Names and secret values (`None` removes a name when updating)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PlanError(f"'{field}' must be an object of names and text values.")
    if len(value) > _MAX_SECRETS:
        raise PlanError(f"'{field}' may hold at most {_MAX_SECRETS} entries.")
    cleaned: dict[str, str | None] = {}
    for key, secret in value.items():
        if not isinstance(key, str) or not pattern.match(key):
            raise PlanError(f"'{field}' has a name that is not allowed: {str(key)[:50]!r}.")
        if secret is None and allow_removal:
            cleaned[key] = None
            continue
        if not isinstance(secret, str) or len(secret) > _SECRET_MAX:
            raise PlanError(f"'{field}.{key}' must be text of at most {_SECRET_MAX} characters.")
        if any(c in secret for c in "\x00\r\n"):
            raise PlanError(f"'{field}.{key}' must be one line of text.")
        cleaned[key] = secret
    return cleaned


def _clean_url(value: Any) -> str:
    url = _clean_text(value, field="url", limit=500)
    if not url:
        return url
    if outbound.url_host_port(url) is None or urlsplit(url).scheme not in ("http", "https"):
        raise PlanError("'url' must be an http(s) URL, like https://tools.example.com/mcp.")
    outbound.check_url(url, field="url")  # resolves the host: never inside a transaction
    return url


def _clean_policies(value: Any) -> dict[str, str | None]:
    if not isinstance(value, Mapping):
        raise PlanError("'tool_policies' must be an object of tool names and policies.")
    cleaned: dict[str, str | None] = {}
    for tool, policy in value.items():
        if policy is not None and policy not in ToolsetTool.Policy.values:
            raise PlanError(
                f"Unknown policy {policy!r} for tool {str(tool)[:60]!r}; use one of: "
                f"{', '.join(ToolsetTool.Policy.values)} (or null for the default)."
            )
        cleaned[str(tool)] = policy
    return cleaned


def _clean_signed_in_only(value: Any) -> dict[str, bool]:
    if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
        raise PlanError("'tool_signed_in_only' must be an object of tool names and true/false.")
    return {str(tool): flag for tool, flag in value.items()}


def _clean_kind(value: Any) -> str:
    # Built-in toolsets ship with Planboard; nobody makes or converts one.
    kinds = [Toolset.Kind.STDIO, Toolset.Kind.HTTP]
    if value not in kinds:
        raise PlanError(f"'kind' must be one of: {', '.join(kinds)}.")
    return str(value)


def _clean_enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise PlanError("'enabled' must be true or false.")
    return value


def _clean_access(value: Any) -> str:
    if value not in Toolset.Access.values:
        raise PlanError(f"'access' must be one of: {', '.join(Toolset.Access.values)}.")
    return str(value)


def _clean_auth(value: Any) -> str:
    if value not in Toolset.Auth.values:
        raise PlanError(f"'auth' must be one of: {', '.join(Toolset.Auth.values)}.")
    return str(value)


def _clean_roots(value: Any) -> str:
    if value not in Toolset.Roots.values:
        raise PlanError(f"'roots' must be one of: {', '.join(Toolset.Roots.values)}.")
    return str(value)


def clean_toolset(fields: dict[str, Any], *, updating: bool) -> dict[str, Any]:
    unknown = set(fields) - set(TOOLSET_FIELDS)
    if unknown:
        raise PlanError(f"Unknown toolset field(s): {', '.join(sorted(unknown))}.")
    cleaners: dict[str, Any] = {
        "name": _clean_name,
        "title": lambda v: _clean_text(v, field="title", limit=NAME_MAX),
        "kind": _clean_kind,
        "command": lambda v: _clean_text(v, field="command", limit=500),
        "args": _clean_args,
        "env": lambda v: _clean_secrets(v, field="env", pattern=_ENV_NAME, allow_removal=updating),
        "headers": lambda v: _clean_secrets(
            v, field="headers", pattern=_HEADER_NAME, allow_removal=updating
        ),
        "url": _clean_url,
        "enabled": _clean_enabled,
        "access": _clean_access,
        "auth": _clean_auth,
        "roots": _clean_roots,
        "teams": _clean_team_ids,
        "tool_policies": _clean_policies,
        "tool_signed_in_only": _clean_signed_in_only,
    }
    return {key: cleaners[key](value) for key, value in fields.items()}


def _clean_team_ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    ):
        raise PlanError("'teams' must be a list of team ids.")
    wanted = sorted(set(value))
    known = set(Team.objects.filter(pk__in=wanted).values_list("pk", flat=True))
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise PlanError(f"No team with id {', '.join(map(str, unknown))}.")
    return wanted


def _check_complete(toolset: Toolset) -> None:
    if toolset.kind == Toolset.Kind.STDIO and not toolset.command:
        raise PlanError("A stdio toolset needs the 'command' that starts its server.")
    if toolset.kind == Toolset.Kind.HTTP and not toolset.url:
        raise PlanError("An http toolset needs the 'url' of its server.")
    if toolset.auth == Toolset.Auth.OAUTH and toolset.kind != Toolset.Kind.HTTP:
        raise PlanError("Only an http toolset can sign in with OAuth.")
    if toolset.roots == Toolset.Roots.WORKSPACE and toolset.kind != Toolset.Kind.STDIO:
        # The tree is a folder on the worker: only a program running there can open it.
        raise PlanError(
            "Only a stdio toolset can be given the session's workspace as its root: the "
            "folder is on the worker, out of a remote server's reach."
        )


Program = tuple[bool, str, list[str], dict[str, Any], str]


def _program_of(toolset: Toolset) -> Program:
    """What a toolset makes the workers run: whether it is a program, which one, and which
    folder it is handed as its root (`roots`: the session's files, or none)."""
    is_program = toolset.kind == Toolset.Kind.STDIO
    roots = toolset.roots if toolset.roots != Toolset.Roots.NONE else ""
    return is_program, toolset.command, list(toolset.args or []), dict(toolset.env or {}), roots


def _require_program_right(user: User | None, before: Program | None, toolset: Toolset) -> None:
    """A stdio toolset is a command the workers run with their OS user's rights (its env, its
    files, the workers' /proc): making one, turning a toolset into one, or changing its
    command, args, env or roots (what it may write into the session's files) needs
    `planboard.run_stdio_toolset`, not just add/change."""
    after = _program_of(toolset)
    becomes_program = after[0] and (before is None or not before[0])
    # Set on any kind: a command left on an http toolset would run once someone switches it.
    program_changed = any(after[1:]) if before is None else before[1:] != after[1:]
    if (becomes_program or program_changed) and not selectors.may_run_programs(user):
        raise Forbidden(
            "Only superusers and staff allowed to run programs on the workers "
            f"({selectors.RUN_STDIO_TOOLSET}) may set up a stdio toolset or change its "
            "command, args, env or roots."
        )


# --- toolsets ---------------------------------------------------------------------------------


def toolset_create(*, user: User | None, **fields: Any) -> Toolset:
    cleaned = clean_toolset(fields, updating=False)
    if "name" not in cleaned or "kind" not in cleaned:
        raise PlanError("'name' and 'kind' are required.")
    if cleaned["name"] == workspace.TOOLSET_NAME:
        raise PlanError(f"The name {workspace.TOOLSET_NAME!r} belongs to the built-in toolset.")
    policies = cleaned.pop("tool_policies", None)
    if policies:
        raise PlanError("Tool policies are set once the toolset's tools are known (refresh).")
    teams = cleaned.pop("teams", None)
    if cleaned.get("url"):
        cleaned["url"] = url_secrets.restore_url(cleaned["url"], "", field="url")
    toolset = Toolset(**cleaned)
    _check_complete(toolset)
    _require_program_right(user, None, toolset)
    with transaction.atomic():
        if Toolset.objects.filter(name=toolset.name).exists():
            raise PlanError(f"A toolset named {toolset.name!r} exists already.")
        toolset.save()
        if teams:
            toolset.teams.set(teams)
    return toolset


def toolset_update(*, toolset_id: int, user: User | None, **fields: Any) -> Toolset:
    """Change a toolset. `env` and `headers` are merged: a name given a value is set, a name
    given null removes it, names left out keep their (unseen) secret values, unless the
    toolset now connects somewhere else (`_destination`): then only the values given with the
    change are kept. A `url` given back with `REDACTED` credentials keeps the stored ones (same
    destination only). `tool_policies` overrides tools' approval policies (null returns a tool
    to its default). `tool_signed_in_only` sets which tools' calls are approved only by someone
    signed in (never from a notification's link)."""
    cleaned = clean_toolset(fields, updating=True)
    with transaction.atomic():
        toolset = Toolset.objects.select_for_update().filter(pk=toolset_id).first()
        if toolset is None:
            raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
        if "name" in cleaned and cleaned["name"] != toolset.name:
            # Stored calls and always-allow decisions name the toolset's tools by it.
            raise PlanError("A toolset's name cannot change; create a new toolset instead.")
        if toolset.kind == Toolset.Kind.BUILTIN and set(cleaned) - _BUILTIN_CHANGES:
            raise PlanError(
                "A built-in toolset runs inside Planboard: only its title, whether it is "
                "enabled and its tools' policies can change."
            )
        policies = cleaned.pop("tool_policies", None)
        guarded = cleaned.pop("tool_signed_in_only", None)
        teams = cleaned.pop("teams", None)
        program_before = _program_of(toolset)
        if "url" in cleaned:
            cleaned["url"] = url_secrets.restore_url(cleaned["url"], toolset.url, field="url")
        was = _destination(toolset)
        for key, value in cleaned.items():
            if key not in ("env", "headers"):
                setattr(toolset, key, value)
        # Secrets were given for one destination: they never follow the toolset to another.
        moved = _destination(toolset) != was
        if moved or toolset.auth != Toolset.Auth.OAUTH:
            # Tokens and the registration belong to one server (and to OAuth): gone.
            toolset.oauth_client, toolset.oauth_tokens = {}, {}
            ToolsetCredential.objects.filter(toolset=toolset).update(oauth_tokens={})
        for key in ("env", "headers"):
            merged = {} if moved else dict(getattr(toolset, key) or {})
            for name, secret in cleaned.get(key, {}).items():
                if secret is None:
                    merged.pop(name, None)
                else:
                    merged[name] = secret
            setattr(toolset, key, merged)
        _check_complete(toolset)
        _require_program_right(user, program_before, toolset)
        toolset.save()
        if teams is not None:
            toolset.teams.set(teams)
        if policies:
            _set_policies(toolset, policies)
        if guarded:
            _set_signed_in_only(toolset, guarded)
    return toolset


def _destination(toolset: Toolset) -> tuple[Any, ...]:
    """Where a toolset's secrets go: the program and its arguments, or the URL's scheme, host
    and port (another path on the same server is the same destination)."""
    if toolset.kind == Toolset.Kind.STDIO:
        return (toolset.kind, toolset.command, tuple(toolset.args or []))
    if toolset.kind == Toolset.Kind.HTTP:
        return (toolset.kind, *url_secrets.destination(toolset.url))
    return (toolset.kind,)


def _tools_named(toolset: Toolset, names: Iterable[str]) -> dict[str, ToolsetTool]:
    """The toolset's tools, locked, by name; refused when one of `names` is not among them."""
    tools = {t.name: t for t in ToolsetTool.objects.select_for_update().filter(toolset=toolset)}
    unknown = sorted(set(names) - set(tools))
    if unknown:
        raise PlanError(
            f"Toolset {toolset.name!r} has no tool named {', '.join(map(repr, unknown))}; "
            "refresh its tools first."
        )
    return tools


def _set_policies(toolset: Toolset, policies: dict[str, str | None]) -> None:
    tools = _tools_named(toolset, policies)
    for name, policy in policies.items():
        tool = tools[name]
        tool.policy = policy or default_policy_of(toolset, tool.name, tool.read_only)
        tool.policy_overridden = policy is not None
        # A person chose this policy for the tool as it reads now: that is the review.
        tool.policy_fingerprint = tool_fingerprint(tool)
        tool.needs_review = False
        tool.save(
            update_fields=["policy", "policy_overridden", "policy_fingerprint", "needs_review"]
        )


def _set_signed_in_only(toolset: Toolset, flags: dict[str, bool]) -> None:
    tools = _tools_named(toolset, flags)
    for name, flag in flags.items():
        ToolsetTool.objects.filter(pk=tools[name].pk).update(signed_in_only=flag)


def toolset_delete(*, toolset_id: int) -> None:
    """Remove a toolset; sessions stop offering its tools, past call records keep its name."""
    with transaction.atomic():
        if Toolset.objects.filter(pk=toolset_id, kind=Toolset.Kind.BUILTIN).exists():
            raise PlanError("A built-in toolset cannot be removed; disable it instead.")
        deleted, _ = Toolset.objects.filter(pk=toolset_id).delete()
        if not deleted:
            raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")


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


# --- a person's own credentials -------------------------------------------------------------------


def toolset_credential_set(
    *, toolset_id: int, user: User, env: Any = None, headers: Any = None
) -> ToolsetCredential:
    """Set `user`'s own env and headers for a per-person toolset they may use (merged as a
    toolset's are: a name given a value is set, given null removed, left out kept)."""
    cleaned = clean_toolset(
        {k: v for k, v in (("env", env), ("headers", headers)) if v is not None}, updating=True
    )
    with transaction.atomic():
        toolset = (
            selectors.toolsets_usable_by(user).select_for_update().filter(pk=toolset_id).first()
        )
        if toolset is None:
            raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
        if toolset.access != Toolset.Access.PER_PERSON:
            raise PlanError(
                f"Toolset {toolset.name!r} uses one shared credential: staff set it on the "
                "toolset. Only per-person toolsets take your own."
            )
        credential, _ = ToolsetCredential.objects.select_for_update().get_or_create(
            toolset=toolset, user=user
        )
        for key in ("env", "headers"):
            merged = dict(getattr(credential, key) or {})
            for name, secret in cleaned.get(key, {}).items():
                if secret is None:
                    merged.pop(name, None)
                else:
                    merged[name] = secret
            setattr(credential, key, merged)
        credential.save()
    return credential


def toolset_credential_delete(*, toolset_id: int, user: User) -> None:
    """Forget `user`'s own credential for a toolset: their sessions stop offering its tools."""
    deleted, _ = ToolsetCredential.objects.filter(toolset_id=toolset_id, user=user).delete()
    if not deleted:
        raise PlanError("You have no credential of your own for this toolset.", code="not_found")


# --- OAuth: connecting an account (docs/TOOLS.md) ---------------------------------------------


def toolset_oauth_connectable(*, toolset_id: int, user: User) -> Toolset:
    """The OAuth toolset `user` may connect: for a per-person one, one they may use; for a
    shared one (one account for everyone), staff allowed to change toolsets only."""
    toolset = selectors.toolsets_usable_by(user).filter(pk=toolset_id).first()
    if toolset is None:
        raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
    if toolset.kind != Toolset.Kind.HTTP or toolset.auth != Toolset.Auth.OAUTH:
        raise PlanError(f"Toolset {toolset.name!r} does not sign in with OAuth.")
    if not toolset.enabled:
        raise PlanError(f"Toolset {toolset.name!r} is disabled.")
    if toolset.access == Toolset.Access.SHARED and not (
        user.is_staff and user.has_perm("planboard.change_toolset")
    ):
        raise Forbidden(
            f"Toolset {toolset.name!r} signs in with one account for everyone: only staff "
            "allowed to change toolsets may connect it."
        )
    return toolset


def toolset_oauth_register(*, toolset_id: int, client: dict[str, Any]) -> None:
    """Keep Planboard's registration at the toolset's authorization server and what discovery
    found (`Toolset.oauth_client`), when "Connect" starts."""
    with transaction.atomic():
        toolset = Toolset.objects.select_for_update().filter(pk=toolset_id).first()
        if toolset is not None:
            toolset.oauth_client = client
            toolset.save(update_fields=["oauth_client"])


def toolset_oauth_connect(
    *, toolset_id: int, user: User, tokens: dict[str, Any]
) -> ToolsetCredential | Toolset:
    """Store the tokens `user` just connected: the toolset's own for a shared toolset, the
    person's `ToolsetCredential` for a per-person one (checked again: the callback comes
    later than the start)."""
    if not tokens:
        raise PlanError("The provider gave no tokens.")
    with transaction.atomic():
        toolset = toolset_oauth_connectable(toolset_id=toolset_id, user=user)
        if toolset.access == Toolset.Access.SHARED:
            toolset = Toolset.objects.select_for_update().get(pk=toolset.pk)
            toolset.oauth_tokens = tokens
            toolset.save(update_fields=["oauth_tokens", "updated_at"])
            return toolset
        credential, _ = ToolsetCredential.objects.select_for_update().get_or_create(
            toolset=toolset, user=user
        )
        credential.oauth_tokens = tokens
        credential.save(update_fields=["oauth_tokens", "updated_at"])
        return credential


def toolset_oauth_tokens_store(
    *, toolset_id: int, user_id: int | None, tokens: dict[str, Any], replacing: dict[str, Any]
) -> bool:
    """Tokens a call changed: refreshed, or `{}` when the provider refused them (the person
    connects again). `user_id` None: the toolset's shared tokens. They replace only the tokens
    the call started from (`replacing`), compared under the row's lock: providers rotate
    refresh tokens, so of two calls refreshing the same tokens one is refused, and whatever
    was stored meanwhile (the winner's tokens, a new connection, the clearing when the toolset
    moved to another server) is newer and stays. Returns whether the tokens were stored."""
    with transaction.atomic():
        if user_id is None:
            toolset = Toolset.objects.select_for_update().filter(pk=toolset_id).first()
            if toolset is None or (toolset.oauth_tokens or {}) != replacing:
                return False
            toolset.oauth_tokens = tokens
            toolset.save(update_fields=["oauth_tokens"])
            return True
        credential = (
            ToolsetCredential.objects.select_for_update()
            .filter(toolset_id=toolset_id, user_id=user_id)
            .first()
        )
        if credential is None or (credential.oauth_tokens or {}) != replacing:
            return False
        if not tokens and not credential.env and not credential.headers:
            # Refused by the provider and nothing else to keep: the person is no longer
            # connected (their sessions stop being offered the tools until they reconnect).
            credential.delete()
            return True
        credential.oauth_tokens = tokens
        credential.save(update_fields=["oauth_tokens"])
        return True


def toolset_rotate_secrets() -> int:
    """Store every toolset's secrets again, so they are encrypted under the first of
    PLANBOARD_SECRETS_KEYS (planboard/secret_fields.py); returns how many toolsets."""
    count = 0
    for toolset_id in Toolset.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            toolset = (
                Toolset.objects.select_for_update().only(*_SECRET_FIELDS).filter(pk=toolset_id)
            ).first()
            if toolset is not None:
                toolset.save(update_fields=list(_SECRET_FIELDS))
                count += 1
    for credential_id in ToolsetCredential.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            credential = (
                ToolsetCredential.objects.select_for_update().filter(pk=credential_id).first()
            )
            if credential is not None:
                credential.save(update_fields=["env", "headers", "oauth_tokens"])
    return count


_SECRET_FIELDS = ("env", "headers", "url", "oauth_client", "oauth_tokens")


# --- sessions ---------------------------------------------------------------------------------


def _clean_toolset_ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    ):
        raise PlanError("'toolsets' must be a list of toolset ids.")
    if len(value) > _MAX_SESSION_TOOLSETS:
        raise PlanError(f"A session may enable at most {_MAX_SESSION_TOOLSETS} toolsets.")
    return sorted(set(value))


def set_session_toolsets(session_id: int, value: Any, *, user: User | None) -> None:
    """Within the caller's transaction, holding the session's lock."""
    wanted = _clean_toolset_ids(value)
    usable = (
        selectors.toolsets_usable_by(user)
        if user is not None
        else Toolset.objects.filter(enabled=True)
    )
    known = set(usable.filter(pk__in=wanted).values_list("pk", flat=True))
    missing = [i for i in wanted if i not in known]
    if missing:
        raise PlanError(
            f"No toolset you may use has the id {', '.join(map(str, missing))}.",
            code="unknown_toolset",
        )
    SessionToolset.objects.filter(session_id=session_id).exclude(toolset_id__in=wanted).delete()
    have = set(
        SessionToolset.objects.filter(session_id=session_id).values_list("toolset_id", flat=True)
    )
    SessionToolset.objects.bulk_create(
        [SessionToolset(session_id=session_id, toolset_id=i) for i in wanted if i not in have]
    )


def session_set_toolsets(
    *, session_id: int, toolset_ids: list[int], user: User | None = None
) -> list[int]:
    """The toolsets a session's agent may use, replacing the previous choice; `user` (when
    given) must own the session or be staff with `change_chatsession`, and may pick only
    toolsets they may use."""
    with transaction.atomic():
        session = _lock_session(session_id)
        if user is not None and not selectors.can_act_in_session(user, session.owner_id):
            raise Forbidden("Only the session's owner or an admin chooses its toolsets.")
        set_session_toolsets(session_id, toolset_ids, user=user)
        ids = selectors.session_toolset_ids(session_id=session_id)
        _publish_session(
            session_id,
            {"type": "session.updated", "session": {**serialize_session(session), "toolsets": ids}},
        )
    return ids
