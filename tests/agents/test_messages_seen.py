"""People's messages the agent has read: the step whose input first holds a person's message
marks it seen (run and step), the transcript's shape carries it, and the session's clients are
told (`session.messages_seen`), like the board's "seen" mark of people's edits."""

from __future__ import annotations

from typing import Any

import pytest

from agents import loop
from planboard import broadcast, selectors, services
from planboard.models import Message
from tests.support.scripted import ScriptedModel, call, do, say, tool_calls


@pytest.fixture
def seen_events() -> Any:
    seen: list[dict[str, Any]] = []
    unsubscribe = broadcast.subscribe(
        lambda group, event: (
            seen.append(event) if event["type"] == "session.messages_seen" else None
        )
    )
    yield seen
    unsubscribe()


def shown(session_id: int) -> dict[str, Any]:
    """The people's messages as clients get them, by their text."""
    return {
        m["content"]: m["seen"]
        for m in selectors.session_messages(session_id=session_id)
        if m["role"] == "user"
    }


@pytest.mark.django_db(transaction=True)  # the event leaves on commit
def test_the_message_that_starts_a_run_is_seen_at_its_first_step(
    user: Any, scripted_model: ScriptedModel, seen_events: list[dict[str, Any]]
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    message, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    assert shown(session.pk) == {"Hello": None}  # not read yet

    scripted_model.script.append(say("Hi."))
    loop.execute_run(run_id=run.pk)

    seen = shown(session.pk)["Hello"]
    assert seen is not None and (seen["run_id"], seen["step"]) == (run.pk, 1)
    assert seen["at"]
    assert [(e["session_id"], e["up_to"], e["seen"]["step"]) for e in seen_events] == [
        (session.pk, message.pk, 1)
    ]
    # The agent's own messages never carry the mark.
    answer = selectors.session_messages(session_id=session.pk)[-1]
    assert answer["role"] == "assistant" and answer["seen"] is None


@pytest.mark.django_db(transaction=True)
def test_a_message_written_mid_run_is_seen_at_the_next_step_only(
    user: Any, scripted_model: ScriptedModel, seen_events: list[dict[str, Any]]
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)

    def write_now(_messages: list[dict[str, Any]]) -> None:
        services.message_post(session_id=session.pk, author=user, content="Also add Nara")

    scripted_model.script.extend(
        [
            do(write_now),  # while the first model call thinks: it was not shown this message
            tool_calls(call("get_subtask_count")),
            tool_calls(call("get_subtask_count")),
            say("Done."),
        ]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan Kyoto")
    loop.execute_run(run_id=run.pk)

    marks = shown(session.pk)
    assert marks["Plan Kyoto"]["step"] == 1
    assert marks["Also add Nara"]["step"] == 2
    assert marks["Also add Nara"]["run_id"] == run.pk
    # One statement per newly read message, not one per step: the third step marks nothing.
    assert [e["seen"]["step"] for e in seen_events] == [1, 2]
    row = Message.objects.get(content="Also add Nara")
    assert (row.seen_in_run_id, row.seen_at_step) == (run.pk, 2)


@pytest.mark.django_db
def test_marking_is_idempotent_and_only_for_peoples_messages(user: Any) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    message, run = services.message_post(session_id=session.pk, author=user, content="Hi")
    first = services.messages_mark_seen(
        session_id=session.pk, up_to_message_id=message.pk, run_id=run.pk, step_number=1
    )
    assert first is not None
    again = services.messages_mark_seen(
        session_id=session.pk, up_to_message_id=message.pk, run_id=run.pk, step_number=2
    )
    assert again is None
    assert Message.objects.get(pk=message.pk).seen_at_step == 1
