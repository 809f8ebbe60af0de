"""Session reads: the session snapshot, its transcript, runs, and the session list; what an
agent step reads of its run, session and transcript; whether anyone watches a session."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Max, Q, QuerySet

from planboard import presence, sql, streams
from planboard.models import AgentRun, ChatSession, Message, Plan, State
from planboard.selectors.access import sessions_visible_to
from planboard.selectors.elicitations import pending_elicitations
from planboard.selectors.plans import plan_snapshot, plan_unseen_edits, plan_usage
from planboard.selectors.runs import run_shown
from planboard.selectors.toolsets import calls_in_flight, pending_tool_calls, session_toolset_ids
from planboard.selectors.workspace import session_files
from planboard.shapes import PlanSnapshot
from planboard.snapshots import (
    build_plan_snapshot_from_values,
    serialize_message,
    serialize_session,
    serialize_tool_call,
)

logger = logging.getLogger(__name__)


class SessionWithPlan(NamedTuple):
    session: ChatSession
    plan: Plan | None  # its current plan, if any
    snapshot: PlanSnapshot | None  # that plan's snapshot, when the session is in plan mode
    calls_flagged: bool  # a tool call of it is always allowed or waits for a person
    run: AgentRun | None = None  # the run asked for, as it is now (None: not of this session)
    messages: int | None = None  # with the run: how many messages the session has


def session_owner_id(*, session_id: int) -> int | None:
    """The session's owner, one row (None: no such session): a posted message's access check."""
    return sql.session_owner_id(session_id)


def session_with_plan(*, session_id: int, run_id: int | None = None) -> SessionWithPlan | None:
    """The session, its current plan (each with its owner's username), in plan mode the plan's
    snapshot, whether one of its tool calls is always allowed or waits for a person, and the
    session's run `run_id` (an agent step's) with the number of the session's messages, in one
    query: every plan tool call and agent step starts with them. None: no such session."""
    found = sql.session_with_plan(session_id, run_id)
    if found is None:
        return None
    session, plan, flagged, run, messages, values = found
    shown = plan is not None and session.plan_mode
    snapshot = build_plan_snapshot_from_values(plan, values) if shown and plan else None
    return SessionWithPlan(session, plan, snapshot, flagged, run, messages)


def agent_run(*, run_id: int) -> AgentRun | None:
    """The run's row as it is now."""
    return AgentRun.objects.filter(pk=run_id).first()


def runs_cancel_requested(*, run_ids: Collection[int]) -> list[int]:
    """Which of these runs someone asked to stop (a run host asks about all its runs at once)."""
    if not run_ids:
        return []
    return list(
        AgentRun.objects.filter(pk__in=list(run_ids), cancel_requested=True).values_list(
            "pk", flat=True
        )
    )


def transcript_since(*, session_id: int, known: Collection[int]) -> tuple[list[int], list[Message]]:
    """Every message id of the session (oldest first), and the messages among them not in
    `known`, whole: what a step reads of a transcript it mostly holds already. Two queries
    whatever its length (one when nothing is new); a message committed late, below ids
    already known, comes too."""
    ids = list(
        Message.objects.filter(session_id=session_id).order_by("id").values_list("id", flat=True)
    )
    known_up_to = max(known, default=0)
    late = [pk for pk in ids if pk <= known_up_to and pk not in known]
    if not late and (not ids or ids[-1] <= known_up_to):
        return ids, []
    # Up to the newest id just read, so both reads see the same messages.
    wanted = Q(pk__gt=known_up_to, pk__lte=ids[-1]) | Q(pk__in=late)
    return ids, list(Message.objects.filter(wanted, session_id=session_id).order_by("id"))


def latest_run(*, session_id: int) -> AgentRun | None:
    return AgentRun.objects.filter(session_id=session_id).order_by("-id").first()


def session_snapshot(*, session_id: int) -> dict[str, Any]:
    """Session settings, its current plan snapshot (or None) and its latest run."""
    session = ChatSession.objects.select_related("owner", "profile").get(pk=session_id)
    data = serialize_session(session)
    data["current_plan"] = (
        plan_snapshot(plan_id=session.current_plan_id) if session.current_plan_id else None
    )
    data["latest_run"] = run_shown(latest_run(session_id=session_id))
    # The answer a model is writing right now (streamed), so a late joiner sees it too.
    data["streaming"] = streams.partial_answer(session_id=session_id)
    data["usage"] = plan_usage(plan_id=session.current_plan_id) if session.current_plan_id else None
    data["unseen_edits"] = (
        plan_unseen_edits(plan_id=session.current_plan_id) if session.current_plan_id else []
    )
    # External tools: the toolsets the agent may use, and the calls waiting for a decision.
    data["toolsets"] = session_toolset_ids(session_id=session_id)
    data["pending_tool_calls"] = [
        serialize_tool_call(r) for r in pending_tool_calls(session_id=session_id)
    ]
    data["calls_in_flight"] = [
        serialize_tool_call(r) for r in calls_in_flight(session_id=session_id)
    ]
    # Questions its tools' servers ask a person (MCP elicitation), waiting for an answer.
    data["pending_elicitations"] = pending_elicitations(session_id=session_id)
    # The files its agent wrote (the `workspace` toolset); `url` downloads one.
    data["files"] = session_files(session_id=session_id)
    return data


def session_messages(
    *, session_id: int, after_id: int = 0, first: int | None = None, last: int | None = None
) -> list[dict[str, Any]]:
    """The transcript after `after_id`, oldest first; `first`/`last` cap it at either end."""
    queryset = Message.objects.filter(session_id=session_id, id__gt=after_id).select_related(
        "author"
    )
    if last is not None:
        newest = list(queryset.order_by("-id")[:last])
        return [serialize_message(m) for m in reversed(newest)]
    queryset = queryset.order_by("id")
    if first is not None:
        queryset = queryset[:first]
    return [serialize_message(m) for m in queryset]


def latest_runs_by_session(session_ids: list[int]) -> dict[int, AgentRun]:
    """The newest run of each session, in one query."""
    newest = (
        AgentRun.objects.filter(session_id__in=session_ids)
        .values("session_id")
        .annotate(newest_id=Max("id"))
        .values("newest_id")
    )
    return {run.session_id: run for run in AgentRun.objects.filter(pk__in=newest)}


def sessions_for_list(user: User) -> QuerySet[ChatSession]:
    """Sessions `user` may open, newest activity first, with their current plan's progress."""
    return (
        sessions_visible_to(user)
        .select_related("owner", "current_plan")
        .annotate(
            plan_total=Count("current_plan__subtasks"),
            plan_done=Count(
                "current_plan__subtasks", filter=Q(current_plan__subtasks__state=State.DONE)
            ),
        )
        .order_by("-updated_at", "-id")
    )


async def session_has_watchers(*, session_id: int) -> bool:
    """Whether a page (any socket that joined presence) has the session open: the agent
    step streams its answer only then, since a streamed answer costs the worker several times
    the CPU of the same answer in one piece. One presence read. True, without reading, when
    `PLANBOARD_STREAM_UNWATCHED` asks for every answer to be streamed (clients that follow
    the socket without joining presence), and when presence cannot be read (Redis away):
    streaming to nobody only costs CPU, where not streaming to someone hides the answer
    until it is stored."""
    if getattr(settings, "PLANBOARD_STREAM_UNWATCHED", False):
        return True
    try:
        return await presence.store().watched(session_id)
    except Exception:
        logger.warning("presence of session %s unreadable; streaming", session_id, exc_info=True)
        return True
