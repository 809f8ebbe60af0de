"""What a toolset's fields may hold (`clean_toolset`, used by the services and the admin's
form) and who may set them: a stdio toolset is a program the workers run, so making or changing
one needs `planboard.run_stdio_toolset` (`_require_program_right`).

Cleaning a `url` resolves its host (`planboard.outbound`): callers clean before they open a
transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import User

from planboard import outbound, selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import NAME_MAX, TEXT_MAX, TOOLSET_NAME_MAX, Team, Toolset, ToolsetTool
from planboard.services._core import _clean_text

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
