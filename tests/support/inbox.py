"""Runs that wait on people, made through the services as the agent loop makes them: a tool
call waiting for approval, a plan waiting for its go-ahead, a budget pause, a question."""

from __future__ import annotations

import json
from typing import Any

from planboard import services
from planboard.models import AgentRun, ChatSession, ToolCall
from planboard.services import Actor


def running(session: ChatSession, user: Any, text: str = "Please help") -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return services.run_start(run_id=run.pk, worker="test")


def waiting_approval(
    session: ChatSession,
    user: Any,
    *,
    call_id: str = "call_1",
    tool: str = "write_note",
    arguments: dict[str, Any] | None = None,
) -> ToolCall:
    """The run asked for `notes__<tool>` and waits for a person to decide it."""
    run = running(session, user)
    arguments = arguments if arguments is not None else {"text": "Buy the JR pass"}
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="assistant",
        content="",
        tool_calls=[
            {
                "id": call_id,
                "type": "function",
                "function": {"name": f"notes__{tool}", "arguments": json.dumps(arguments)},
            }
        ],
    )
    record = services.tool_call_open(
        session_id=session.pk,
        run_id=run.pk,
        tool_call_id=call_id,
        tool_name=f"notes__{tool}",
        toolset_id=None,
        tool=tool,
        arguments=arguments,
        read_only=False,
        status="pending",
    )
    services.run_pause_for_approval(run_id=run.pk)
    return record


def waiting_confirmation(session: ChatSession, user: Any, name: str = "Kyoto trip") -> AgentRun:
    """The agent drafted a plan and waits for the go-ahead."""
    run = running(session, user, "Plan a trip")
    services.plan_create(
        session_id=session.pk,
        actor=Actor.agent(run),
        name=name,
        subtasks=[{"name": "Book flights"}, {"name": "Book a ryokan"}],
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content="Shall I start?"
    )
    return services.run_finish(run_id=run.pk, status="waiting_for_user")


def waiting_budget(session: ChatSession, user: Any) -> AgentRun:
    services.session_update(session_id=session.pk, budget_usd=0)
    run = running(session, user)
    return services.run_finish(
        run_id=run.pk,
        status="waiting_for_user",
        pause_reason=AgentRun.PAUSE_BUDGET,
        error="Paused at the spending limit.",
    )


def waiting_question(session: ChatSession, user: Any, question: str) -> AgentRun:
    """The agent asked something and stopped (no plan to confirm)."""
    run = running(session, user)
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content=question
    )
    return services.run_finish(run_id=run.pk, status="waiting_for_user")


def answerer(name: str, *, named_by: str | None = "anyone") -> Any:
    """A new person who accepts being named to answer by `named_by` (None: the default)."""
    from django.contrib.auth import get_user_model

    someone = get_user_model().objects.create_user(
        name, password=f"pw-{name}-12345", email=f"{name}@example.com"
    )
    if named_by is not None:
        services.answerer_consent_set(user=someone, named_by=named_by)
    return someone


def shared_session(owner: Any, *names: str) -> ChatSession:
    """A session of `owner`'s with these people named to answer it."""
    session = services.session_create(owner=owner, title="Shared")
    services.session_set_answerers(session_id=session.pk, user=owner, usernames=list(names))
    return session


def deactivate(who: Any) -> None:
    who.is_active = False
    who.save(update_fields=["is_active"])
