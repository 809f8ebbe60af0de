"""Toolset reads: which toolsets people may use, what a session offers its agent, and the
record of its external tool calls."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet, Subquery

from planboard import sql
from planboard.models import (
    AgentRun,
    ChatSession,
    InputRound,
    SessionToolset,
    ToolCall,
    Toolset,
    ToolsetCredential,
    ToolsetTool,
)
from planboard.selectors.access import sees_toolset_configuration
from planboard.snapshots import serialize_tool_call, serialize_toolset

# The newest calls a session's call list shows (older ones stay in the admin).
TOOL_CALLS_SHOWN = 500


def open_to(user_id: Any, *, toolset: str = "pk") -> Q:
    """Toolsets (`toolset`: the path to the toolset's id) limited to no team, or to a team
    the user (an id, or an expression giving one) is a member of."""
    links = Toolset.teams.through.objects.filter(toolset_id=OuterRef(toolset))
    return ~Exists(links) | Exists(links.filter(team__members=user_id))


def toolsets_usable_by(user: User) -> QuerySet[Toolset]:
    """What a signed-in person may enable in their sessions: every enabled toolset open to
    them (limited to no team, or to one of theirs)."""
    if not user.is_authenticated:
        return Toolset.objects.none()
    return Toolset.objects.filter(open_to(user.pk), enabled=True)


def toolsets_visible_to(user: User) -> QuerySet[Toolset]:
    """Staff with the toolset's view (or change) permission see every toolset; everyone else
    (bare staff included) those they may use."""
    if sees_toolset_configuration(user):
        return Toolset.objects.all()
    return toolsets_usable_by(user)


def toolset_rows(queryset: QuerySet[Toolset], *, user: User) -> QuerySet[Toolset]:
    """The toolsets with their tools and teams, in three queries (not their cached listings:
    the tools are read as rows; the catalog only for staff, who are shown it), each with
    whether `user` has connected their own credential (`connected`)."""
    unread = ("tools_cache",) if sees_toolset_configuration(user) else ("tools_cache", "catalog")
    return (
        queryset.order_by("name")
        .defer(*unread)
        .annotate(
            connected=Exists(
                ToolsetCredential.objects.filter(toolset_id=OuterRef("pk"), user_id=user.pk)
            )
        )
        .prefetch_related(Prefetch("tools", queryset=ToolsetTool.objects.order_by("name")), "teams")
    )


def toolset_data(toolset: Toolset, *, user: User) -> dict[str, Any]:
    """A toolset (from `toolset_rows`) as `user` may see it: how it is reached only for staff
    allowed to view toolsets (Django caches a user's permissions, so a list asks the database
    once)."""
    configuration = sees_toolset_configuration(user)
    data = serialize_toolset(toolset, list(toolset.tools.all()), configuration=configuration)
    # Whether calls in this person's sessions can reach the server.
    data["connected"] = toolset.access == Toolset.Access.SHARED or bool(
        getattr(toolset, "connected", False)
    )
    if toolset.auth == Toolset.Auth.OAUTH and toolset.access == Toolset.Access.SHARED:
        data["connected"] = bool(toolset.oauth_tokens)  # staff connected the one account
    if configuration:
        data["teams"] = sorted(team.pk for team in toolset.teams.all())
    return data


def toolset_as_called(toolset: Toolset, *, session_id: int) -> Toolset | None:
    """`toolset` as a call in the session reaches it: a per-person one with the session
    owner's own env and headers merged over its own (in memory, never saved), or None when
    the owner has none or is deactivated (a run going on when they were stops reaching it)."""
    if toolset.access != Toolset.Access.PER_PERSON:
        return toolset
    owner = ChatSession.objects.filter(pk=session_id, owner__is_active=True).values("owner_id")[:1]
    credential = ToolsetCredential.objects.filter(toolset=toolset, user_id__in=owner).first()
    if credential is None:
        return None
    toolset.env = {**(toolset.env or {}), **(credential.env or {})}
    toolset.headers = {**(toolset.headers or {}), **(credential.headers or {})}
    # OAuth: the owner's own tokens, and where a refresh of them is stored.
    toolset.oauth_tokens = credential.oauth_tokens or {}
    toolset.oauth_user_id = credential.user_id
    return toolset


def toolset_called_before(*, session_id: int, toolset_id: int, call_id: int) -> bool:
    """Whether calls of the session other than `call_id` reached the toolset's server (so a
    new server session loses whatever the earlier one kept)."""
    done = [ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED, ToolCall.Status.INTERRUPTED]
    return (
        ToolCall.objects.filter(session_id=session_id, toolset_id=toolset_id, status__in=done)
        .exclude(pk=call_id)
        .exists()
    )


def tool_sessions_wanted(*, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Of the (chat session, toolset) pairs a worker holds live MCP sessions for, those still
    wanted: the chat session exists and enables the toolset, the toolset is enabled, and the
    chat session's owner is active (a live session may hold their credentials)."""
    if not pairs:
        return set()
    found = SessionToolset.objects.filter(
        session_id__in={s for s, _ in pairs},
        toolset_id__in={t for _, t in pairs},
        toolset__enabled=True,
        session__owner__is_active=True,
    ).values_list("session_id", "toolset_id")
    return set(pairs) & {(s, t) for s, t in found}


def toolset_credential_count(*, toolset_id: int) -> int:
    """How many people connected their own credential (key or account) for a toolset."""
    return ToolsetCredential.objects.filter(toolset_id=toolset_id).count()


def session_toolsets_in_use(*, session_id: int) -> list[Toolset]:
    """The toolsets whose servers the session's agent can reach now: enabled, enabled by the
    session, open to its owner (teams) and, per person, connected by the owner; by name, with
    their `catalog` (the same rule as `session_tools`)."""
    owner = Subquery(ChatSession.objects.filter(pk=session_id).values("owner_id")[:1])
    return list(
        Toolset.objects.filter(
            open_to(owner),
            Q(access=Toolset.Access.SHARED)
            | Exists(ToolsetCredential.objects.filter(toolset_id=OuterRef("pk"), user_id=owner)),
            sessions__session_id=session_id,
            enabled=True,
        )
        .exclude(kind=Toolset.Kind.BUILTIN)
        .only("id", "name", "title", "catalog")
        .order_by("name")
    )


def session_catalog(*, session_id: int, kind: str) -> list[dict[str, Any]]:
    """What the session's toolsets in use offer of `kind` (`resources`, `templates` or
    `prompts`, as their last refresh stored it), each entry with its `toolset_id` and
    `toolset` (name)."""
    found = []
    for toolset in session_toolsets_in_use(session_id=session_id):
        for entry in (toolset.catalog or {}).get(kind) or []:
            found.append({"toolset_id": toolset.pk, "toolset": toolset.name, **entry})
    return found


def session_resource(*, session_id: int, toolset_id: int, uri: str) -> dict[str, Any] | None:
    """The resource `uri` of `toolset_id` when the session may use that toolset now and its
    server lists that resource (None otherwise), with `toolset_id` and `toolset`."""
    for entry in session_catalog(session_id=session_id, kind="resources"):
        if entry["toolset_id"] == toolset_id and entry["uri"] == uri:
            return entry
    return None


def session_prompt(*, session_id: int, toolset_id: int, name: str) -> dict[str, Any] | None:
    """The prompt `name` of `toolset_id` when the session may use that toolset now and its
    server lists that prompt (None otherwise)."""
    for entry in session_catalog(session_id=session_id, kind="prompts"):
        if entry["toolset_id"] == toolset_id and entry["name"] == name:
            return entry
    return None


def session_toolset_ids(*, session_id: int) -> list[int]:
    return list(
        SessionToolset.objects.filter(session_id=session_id)
        .order_by("toolset_id")
        .values_list("toolset_id", flat=True)
    )


def session_tools(*, session_id: int, owner_id: int | None = None) -> list[ToolsetTool]:
    """The external tools a session's agent is offered: tools its server still lists (and
    Planboard can call), of enabled toolsets the session enables, that staff have not set to
    `never`; by toolset and tool name, each with its toolset's id and name (other fields load
    on first use: never the toolset's cached listing, its secrets or how its server starts).
    A toolset limited to teams is offered while the session's owner is in one of them, a
    per-person one once the owner has connected their credential. Read at every agent step,
    so it is one of `planboard.sql`'s statements. `owner_id`: the session's owner, when the
    caller has read the session."""
    if owner_id is None:
        owner_id = (
            ChatSession.objects.filter(pk=session_id).values_list("owner_id", flat=True).first()
        )
        if owner_id is None:
            return []
    return sql.offered_tools(session_id, owner_id)


def tool_always_allowed(*, session_id: int, toolset_id: int, tool: str) -> bool:
    """Someone approved a call of this tool in this session with "always allow"."""
    return ToolCall.objects.filter(
        session_id=session_id, toolset_id=toolset_id, tool=tool, always_allow=True
    ).exists()


def session_tool_calls(*, session_id: int, status: str | None = None) -> list[dict[str, Any]]:
    """The session's external tool calls, oldest first (the newest `TOOL_CALLS_SHOWN`)."""
    queryset = ToolCall.objects.filter(session_id=session_id).select_related("decided_by")
    if status:
        queryset = queryset.filter(status=status)
    newest = list(queryset.order_by("-id")[:TOOL_CALLS_SHOWN])
    return [serialize_tool_call(r) for r in reversed(newest)]


def session_tools_and_call_flags(
    *,
    session_id: int,
    owner_id: int | None = None,
    flagged: bool = True,
) -> tuple[list[ToolsetTool], set[tuple[int, str]], list[ToolCall]]:
    """What an agent step needs of a session's external tools: `session_tools`, the
    (toolset, tool) pairs someone chose to "always allow", and the calls waiting for a person
    (oldest first). `flagged=False`: the caller knows the session has neither (one query)."""
    allowed: set[tuple[int, str]] = set()
    pending: list[ToolCall] = []
    if flagged:
        calls = ToolCall.objects.filter(
            Q(always_allow=True) | Q(status=ToolCall.Status.PENDING), session_id=session_id
        )
        for record in calls.order_by("id"):
            if record.always_allow and record.toolset_id is not None:
                allowed.add((record.toolset_id, record.tool))
            if record.status == ToolCall.Status.PENDING:
                pending.append(record)
    return session_tools(session_id=session_id, owner_id=owner_id), allowed, pending


def pending_tool_calls(*, session_id: int) -> list[ToolCall]:
    return list(
        ToolCall.objects.filter(session_id=session_id, status=ToolCall.Status.PENDING).order_by(
            "id"
        )
    )


def calls_in_flight(*, session_id: int) -> list[ToolCall]:
    """The session's calls its servers are working on: running (a task's status with them)
    or parked on their server's questions; what a page opened meanwhile shows on their lines."""
    statuses = [ToolCall.Status.RUNNING, ToolCall.Status.INPUT]
    return list(ToolCall.objects.filter(session_id=session_id, status__in=statuses).order_by("id"))


def tool_call_input_rounds(*, record_id: int) -> int:
    """How many times the call's server asked people for input (its rounds so far)."""
    return InputRound.objects.filter(tool_call_id=record_id).count()


def tool_call_with_task(*, record_id: int) -> ToolCall | None:
    """A running call whose server runs it as a task (its id stored), with its toolset as it
    is called: what the worker now driving its run polls. None when it has no task or is no
    longer running."""
    record = (
        ToolCall.objects.select_related("toolset")
        .defer("toolset__tools_cache")
        .filter(pk=record_id, status=ToolCall.Status.RUNNING)
        .exclude(task_id="")
        .first()
    )
    if record is not None and record.toolset is not None:
        record.toolset = toolset_as_called(record.toolset, session_id=record.session_id)
    return record


def abandoned_tasks(*, limit: int) -> list[ToolCall]:
    """Calls whose MCP task waited on people's answers when their run ended (stopped, or
    failed) — the task still open at its server, nobody left to poll it — with their toolsets
    as called: what the sweep cancels at the server (`services.tool_call_task_abandon`)."""
    ended = [
        AgentRun.Status.CANCELLED,
        AgentRun.Status.FAILED,
        AgentRun.Status.SUCCEEDED,
    ]
    records = list(
        ToolCall.objects.select_related("toolset")
        .defer("toolset__tools_cache")
        .filter(status=ToolCall.Status.INPUT, run__status__in=ended, toolset__isnull=False)
        .exclude(task_id="")
        .order_by("pk")[:limit]
    )
    for record in records:
        assert record.toolset is not None
        record.toolset = toolset_as_called(record.toolset, session_id=record.session_id)
    return records
