"""Driving an agent run from a test: a person's message queues it, the loop takes it to its
stop; and what a tool call left behind (its record, its answer to the model)."""

from __future__ import annotations

from typing import Any

from agents import loop
from planboard import services
from planboard.models import AgentRun, ChatSession, Message, ToolCall


def post(session: ChatSession, user: Any, text: str = "Do it") -> AgentRun:
    """`user` writes `text` in the session; the run it queues (or feeds, or resumes)."""
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return run


def drive(run: AgentRun) -> AgentRun:
    """The loop runs `run` in this thread until it stops: finished, failed or waiting."""
    return loop.execute_run(run_id=run.pk)


def record(session: ChatSession, call_id: str) -> ToolCall:
    """The stored record of a tool call."""
    return ToolCall.objects.get(session=session, tool_call_id=call_id)


def result_of(session: ChatSession, call_id: str) -> str:
    """What the model was told a tool call returned."""
    return Message.objects.get(session=session, role="tool", tool_call_id=call_id).content
