"""A long tool call's progress reaches the people watching the session: the pinned
reference "everything" server's `trigger-long-running-operation` reports each step while it
runs, and the session's group hears `tool.progress` events for that call, in order, the last
step always, before the call's result; a chatty server is thinned out."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agents import server_calls
from planboard import broadcast, services
from planboard.models import ChatSession, ToolCall, Toolset
from tests.support.mcp_servers import everything_server_argv
from tests.support.runs import HostLoop, post, result_of
from tests.support.scripted import ScriptedModel, call, say, tool_calls

pytestmark = pytest.mark.django_db
TOOL = "everything__trigger-long-running-operation"


@pytest.fixture
def everything(superuser: Any, session: ChatSession) -> Toolset:
    node, script, mode = everything_server_argv()
    toolset = services.toolset_create(
        user=superuser, name="everything", kind="stdio", command=node, args=[script, mode]
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    services.toolset_update(
        toolset_id=toolset.pk,
        user=None,
        tool_policies={"trigger-long-running-operation": "auto"},
    )
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    return toolset


def heard(session: ChatSession) -> tuple[list[dict[str, Any]], Any]:
    events: list[dict[str, Any]] = []
    lock = threading.Lock()
    group = broadcast.session_group(session.pk)

    def listener(to: str, event: Any) -> None:
        if to == group:
            with lock:
                events.append({**event, "heard_at": time.time()})

    return events, broadcast.subscribe(listener)


def test_a_long_calls_progress_is_told_to_the_session_before_its_result(
    session: ChatSession, user: Any, everything: Toolset, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [tool_calls(call(TOOL, call_id="long1", duration=1.2, steps=4)), say("It finished.")]
    )
    events, unsubscribe = heard(session)
    try:
        with HostLoop() as host:
            run = host.drive(post(session, user))
    finally:
        unsubscribe()
    assert result_of(session, "long1").startswith("Long running operation completed")
    assert run.status == "succeeded", run.error
    progress = [e for e in events if e["type"] == "tool.progress"]
    assert progress, [e["type"] for e in events]
    assert {e["tool_call_id"] for e in progress} == {"long1"}
    assert all(e["total"] == 4 and e["session_id"] == session.pk for e in progress)
    steps = [e["progress"] for e in progress]
    assert steps == sorted(steps) and steps[-1] == 4  # in order, the last step always told
    # They come while the call runs: before its result is recorded.
    finished = ToolCall.objects.get(session=session, tool_call_id="long1").finished_at
    assert finished is not None
    assert max(e["heard_at"] for e in progress) <= finished.timestamp()


def test_a_chatty_servers_progress_is_thinned_but_its_end_is_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    posted: list[dict[str, Any]] = []

    class Lane:
        def post(self, fn: Any, /, *args: Any) -> None:
            posted.append(fn.keywords)

    record: Any = type("Record", (), {"session_id": 7, "tool_call_id": "c1"})()
    report = server_calls.progress_reporter(record, lane=Lane())  # type: ignore[arg-type]
    clock = [100.0]
    monkeypatch.setattr(server_calls.time, "monotonic", lambda: clock[0])
    for step in range(1, 10):  # nine notifications within 0.09 s
        report(step, 10, f"step {step}")
        clock[0] += 0.01
    report(10, 10, "<b>done</b>")
    assert [p["progress"] for p in posted] == [1, 10]
    assert posted[-1]["message"] == "<b>done</b>"  # the server's words, as data
    assert posted[-1]["tool_call_id"] == "c1" and posted[-1]["session_id"] == 7
