"""External tools: toolsets (MCP servers) staff configure, the approval policies of the
tools they offer, and the ones a session enables. Their fields are cleaned in
`toolset_fields`, their servers asked in `toolset_discovery`, their secrets and OAuth tokens
kept in `toolset_credentials`; the calls made of them are recorded and decided in `tool_calls`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from planboard import selectors, url_secrets, workspace
from planboard.exceptions import Forbidden, PlanError
from planboard.models import SessionToolset, Toolset, ToolsetCredential, ToolsetTool
from planboard.services._core import _lock_session, _publish_session
from planboard.services.tool_listing import default_policy_of, tool_fingerprint
from planboard.services.toolset_fields import (
    _check_complete,
    _program_of,
    _require_program_right,
    clean_toolset,
)
from planboard.snapshots import serialize_session

_MAX_SESSION_TOOLSETS = 50
# What staff may change on a built-in toolset.
_BUILTIN_CHANGES = {"name", "title", "enabled", "tool_policies", "tool_signed_in_only"}


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
