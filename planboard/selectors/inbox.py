"""What waits on a person (the inbox), and the record of who decided what.

An inbox item is keyed `tool_call:<record id>` (a call waiting for approval),
`run:<run id>:<wait>` (a run waiting for the user: its plan's go-ahead, a raised budget, or an
answer to its question; `wait` counts the times the run has waited, so a run that waits again
is a new item) or `elicitation:<id>` (a tool's server asks a person something during a call).
The key is what "not now", notifications and action links refer to.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypedDict

from django.contrib.auth.models import User
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from planboard.models import (
    AgentRun,
    ChatSession,
    Decision,
    Elicitation,
    InboxSnooze,
    Message,
    State,
    SubTask,
    ToolCall,
    ToolsetTool,
)
from planboard.selectors.access import (
    Person,
    can_act_in_session,
    sessions_answerable_by,
)
from planboard.selectors.elicitations import elicitation_key
from planboard.snapshots import iso

ARGUMENTS_SUMMARY_MAX = 300
QUESTION_MAX = 600


class InboxItem(TypedDict):
    key: str
    kind: str
    session: dict[str, Any]
    subtask: dict[str, Any] | None
    since: str | None
    url: str
    actions: list[str]
    snoozed_until: str | None
    tool_call: dict[str, Any] | None
    plan: dict[str, Any] | None
    budget: dict[str, Any] | None
    question: str | None
    elicitation: dict[str, Any] | None


def tool_call_key(record_id: int) -> str:
    return f"tool_call:{record_id}"


def run_key(run_id: int, wait: int) -> str:
    """One wait of a run: the run's `wait`-th time waiting for the user (`AgentRun.waits`)."""
    return f"run:{run_id}:{wait}"


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= 18 else None


def parse_item_key(key: str) -> tuple[str, int] | None:
    """`("tool_call", id)`, `("run", run id)` (of `run:<id>:<wait>`) or `("elicitation", id)`;
    None for anything else."""
    kind, _, rest = key.partition(":")
    if kind == "run":
        run, _, wait = rest.partition(":")
        number = _number(run)
        return None if number is None or _number(wait) is None else ("run", number)
    number = _number(rest)
    if kind not in ("tool_call", "elicitation") or number is None:
        return None
    return kind, number


def arguments_summary(arguments: Any) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    if len(text) > ARGUMENTS_SUMMARY_MAX:
        text = text[: ARGUMENTS_SUMMARY_MAX - 1] + "…"
    return text


def request_fingerprint(tool_name: str, arguments: Any) -> str:
    """Identical requests (same tool, same arguments) share this: bulk approval groups by it."""
    text = json.dumps([tool_name, arguments], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def awaits_confirmation(session: ChatSession, states: list[str], plan_state: str | None) -> bool:
    """The session wants a go-ahead and its current plan is presented but not started (the
    agent loop's own rule, `agents.context.StepContext.plan_awaits_confirmation`)."""
    return bool(
        session.need_user_confirm
        and plan_state is not None
        and plan_state not in (State.DONE, State.ABANDONED)
        and State.TODO in states
        and State.IN_PROGRESS not in states
        and State.DONE not in states
    )


def _session_ref(session: ChatSession) -> dict[str, Any]:
    return {"id": session.pk, "title": session.title, "owner": session.owner.get_username()}


def _session_url(session_id: int, anchor: str) -> str:
    return f"{reverse('web:session', args=[session_id])}#{anchor}"


def _base(
    key: str, kind: str, session: ChatSession, since: datetime | None, anchor: str
) -> InboxItem:
    return {
        "key": key,
        "kind": kind,
        "session": _session_ref(session),
        "subtask": None,
        "since": iso(since),
        "url": _session_url(session.pk, anchor),
        "actions": [],
        "snoozed_until": None,
        "tool_call": None,
        "plan": None,
        "budget": None,
        "question": None,
        "elicitation": None,
    }


def _in_progress(plan_ids: Iterable[int | None]) -> dict[int, dict[str, Any]]:
    """The subtask in progress of each plan that has one (`{id, name}` by plan id)."""
    return {
        s.plan_id: {"id": s.pk, "name": s.name}
        for s in SubTask.objects.filter(
            plan_id__in=[p for p in plan_ids if p], state=State.IN_PROGRESS
        )
    }


def _signed_in_only(records: list[ToolCall]) -> set[tuple[int, str]]:
    """(toolset id, tool) of the tools among `records` whose calls only a signed-in person
    approves (`ToolsetTool.signed_in_only`)."""
    toolsets = {r.toolset_id for r in records if r.toolset_id is not None}
    if not toolsets:
        return set()
    rows = ToolsetTool.objects.filter(toolset_id__in=toolsets, signed_in_only=True)
    return set(rows.values_list("toolset_id", "name"))


def _approval_items(sessions: Iterable[int], user: Person) -> list[InboxItem]:
    records = list(
        ToolCall.objects.filter(session_id__in=sessions, status=ToolCall.Status.PENDING)
        .select_related("session__owner")
        .order_by("id")
    )
    started = _in_progress({r.session.current_plan_id for r in records})
    guarded = _signed_in_only(records)
    items = []
    for record in records:
        item = _base(
            tool_call_key(record.pk),
            Decision.Kind.APPROVAL,
            record.session,
            record.created_at,
            f"tool-call-{record.tool_call_id}",
        )
        item["tool_call"] = {
            "id": record.pk,
            "tool_call_id": record.tool_call_id,
            "tool_name": record.tool_name,
            "arguments": arguments_summary(record.arguments),
            "run_id": record.run_id,
            "same_request": request_fingerprint(record.tool_name, record.arguments),
            "signed_in_only": (record.toolset_id, record.tool) in guarded,
        }
        item["subtask"] = started.get(record.session.current_plan_id or 0)
        # "Always allow" speaks for the session's future calls: the owner's (or staff's).
        always = can_act_in_session(user, record.session.owner_id)
        item["actions"] = ["approve", "deny", "always_allow"] if always else ["approve", "deny"]
        items.append(item)
    return items


def _elicitation_items(sessions: Iterable[int]) -> list[InboxItem]:
    rows = (
        Elicitation.objects.filter(
            session_id__in=sessions,
            status=Elicitation.Status.PENDING,
            expires_at__gt=timezone.now(),  # past it, nobody waits any more (a dead worker's)
        )
        .select_related("session__owner", "tool_call")
        .order_by("id")
    )
    items = []
    for row in rows:
        item = _base(
            elicitation_key(row.pk),
            Decision.Kind.ELICITATION,
            row.session,
            row.created_at,
            f"elicitation-{row.pk}",
        )
        message = row.message
        if len(message) > QUESTION_MAX:
            message = message[: QUESTION_MAX - 1] + "…"
        item["elicitation"] = {
            "id": row.pk,
            "toolset": row.toolset_name,
            "tool_name": row.tool_call.tool_name if row.tool_call is not None else None,
            "mode": row.mode,
            "message": message,
            "requested_schema": row.requested_schema,
            "url": row.url,
            "run_id": row.run_id,
            "expires_at": iso(row.expires_at),
        }
        item["actions"] = ["accept", "decline", "cancel"]
        items.append(item)
    return items


def _run_items(sessions: Iterable[int], user: Person) -> list[InboxItem]:
    runs = list(
        AgentRun.objects.filter(session_id__in=sessions, status=AgentRun.Status.WAITING_FOR_USER)
        .select_related("session__owner", "session__current_plan")
        .order_by("id")
    )
    if not runs:
        return []
    plan_ids = [r.session.current_plan_id for r in runs if r.session.current_plan_id]
    states: dict[int, list[str]] = {}
    steps: dict[int, list[dict[str, Any]]] = {}
    for pk, plan_id, name, state in (
        SubTask.objects.filter(plan_id__in=plan_ids)
        .order_by("plan_id", "position")
        .values_list("pk", "plan_id", "name", "state")
    ):
        states.setdefault(plan_id, []).append(state)
        steps.setdefault(plan_id, []).append({"id": pk, "name": name})
    started = _in_progress(plan_ids)
    questions = _last_answers([r.pk for r in runs])
    items = []
    for run in runs:
        session = run.session
        plan = session.current_plan
        since = run.finished_at or run.started_at or run.created_at
        key = run_key(run.pk, run.waits)
        if run.pause_reason == AgentRun.PAUSE_BUDGET:
            item = _base(key, Decision.Kind.BUDGET, session, since, f"run-{run.pk}")
            item["budget"] = {
                "spent_usd": str(session.spent_usd),
                "budget_usd": None if session.budget_usd is None else str(session.budget_usd),
                "spent_tokens": session.spent_tokens,
                "budget_tokens": session.budget_tokens,
            }
            item["actions"] = (
                ["raise_budget", "reply"]
                if can_act_in_session(user, session.owner_id)
                else ["reply"]
            )
        elif plan is not None and awaits_confirmation(session, states.get(plan.pk, []), plan.state):
            item = _base(key, Decision.Kind.CONFIRMATION, session, since, f"run-{run.pk}")
            # The revision and its steps, in order: what a confirmation confirms.
            item["plan"] = {
                "id": plan.pk,
                "name": plan.name,
                "version": plan.version,
                "subtasks": steps.get(plan.pk, []),
            }
            item["actions"] = ["confirm", "reply"]
        else:
            item = _base(key, Decision.Kind.QUESTION, session, since, f"run-{run.pk}")
            item["question"] = questions.get(run.pk, "")
            item["actions"] = ["reply"]
        if plan is not None:
            item["subtask"] = started.get(plan.pk)
        items.append(item)
    return items


def _last_answers(run_ids: list[int]) -> dict[int, str]:
    answers: dict[int, str] = {}
    rows = (
        Message.objects.filter(run_id__in=run_ids, role=Message.Role.ASSISTANT)
        .exclude(content="")
        .order_by("id")
        .values_list("run_id", "content")
    )
    for run_id, content in rows:
        if run_id is not None:
            text = content if len(content) <= QUESTION_MAX else content[: QUESTION_MAX - 1] + "…"
            answers[run_id] = text
    return answers


def inbox_items(
    *, user: Person, include_snoozed: bool = False, now: datetime | None = None
) -> list[InboxItem]:
    """Everything waiting on `user` across the sessions they may answer, oldest first;
    items they said "not now" to are left out until then (or marked, with
    `include_snoozed`)."""
    if not isinstance(user, User) or not user.is_authenticated:
        return []
    sessions = list(sessions_answerable_by(user).values_list("pk", flat=True))
    if not sessions:
        return []
    items = (
        _approval_items(sessions, user) + _elicitation_items(sessions) + _run_items(sessions, user)
    )
    items.sort(key=lambda item: item["since"] or "")
    now = now or timezone.now()
    snoozes = dict(
        InboxSnooze.objects.filter(user=user, until__gt=now).values_list("item_key", "until")
    )
    shown = []
    for item in items:
        until = snoozes.get(item["key"])
        if until is not None:
            if not include_snoozed:
                continue
            item["snoozed_until"] = iso(until)
        shown.append(item)
    return shown


def inbox_item(*, user: Person, key: str) -> InboxItem | None:
    """One item still waiting on `user` (snoozed or not), or None."""
    return next(
        (item for item in inbox_items(user=user, include_snoozed=True) if item["key"] == key),
        None,
    )


def inbox_recipients(*, session_id: int) -> list[int]:
    """Whose inbox a session's waiting items appear in: its owner and its answerers, active
    ones only (and nobody's while the owner is inactive: the session runs no more)."""
    owner = ChatSession.objects.filter(pk=session_id, owner__is_active=True)
    answerers = ChatSession.answerers.through.objects.filter(
        chatsession_id__in=owner.values("pk"), user__is_active=True
    )
    return sorted(
        {*owner.values_list("owner_id", flat=True), *answerers.values_list("user_id", flat=True)}
    )


def session_answerers(*, session_id: int) -> list[dict[str, Any]]:
    """The people named to answer the session, active ones (by username)."""
    users = User.objects.filter(answerable_sessions=session_id, is_active=True).order_by("username")
    return [{"id": u.pk, "username": u.get_username()} for u in users]


# --- who decided ----------------------------------------------------------------------------


def serialize_decision(decision: Decision) -> dict[str, Any]:
    return {
        "id": decision.pk,
        "session_id": decision.session_id,
        "run_id": decision.run_id,
        "plan_id": decision.plan_id,
        "tool_call_id": decision.tool_call.tool_call_id if decision.tool_call else None,
        "kind": decision.kind,
        "decision": decision.decision,
        "user": decision.user.get_username() if decision.user else None,
        "channel": decision.channel,
        "summary": decision.summary,
        "created_at": iso(decision.created_at),
    }


def decisions(*, session_id: int | None = None, plan_id: int | None = None) -> list[dict[str, Any]]:
    """Who decided what, when and how, oldest first: a session's, or those made while a plan
    was the session's current one."""
    query = Q()
    if session_id is not None:
        query &= Q(session_id=session_id)
    if plan_id is not None:
        query &= Q(plan_id=plan_id)
    rows = Decision.objects.filter(query).select_related("user", "tool_call").order_by("id")
    return [serialize_decision(d) for d in rows]
