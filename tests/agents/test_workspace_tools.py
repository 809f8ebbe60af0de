"""The built-in `workspace` toolset in the agent loop, driven by the scripted model: files
written, read, listed and deleted; deleting waits for a person; bad paths and oversized
content come back as `Error: …` results; a write is done once even across a crash."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.storage import default_storage

from agents import external_tools, tool_offers
from agents import workspace as agent_workspace
from planboard import selectors, services, workspace
from planboard.models import AgentRun, ChatSession, Message, ToolCall, Toolset, WorkspaceFile
from tests.support.runs import drive, post, record, result_of
from tests.support.scripted import ScriptedModel, call, say, tool_calls

WRITE = "workspace__write_file"


def stored(session: ChatSession, path: str) -> str:
    file = WorkspaceFile.objects.get(session=session, path=path)
    return selectors.workspace_file_bytes(file).decode()


def paths(session: ChatSession) -> list[str]:
    return [f["path"] for f in selectors.session_files(session_id=session.pk)]


# --- offered by default -----------------------------------------------------------------------


def test_every_new_session_offers_the_workspace(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    toolset = Toolset.objects.get(name="workspace")
    assert toolset.kind == Toolset.Kind.BUILTIN
    assert selectors.session_snapshot(session_id=session.pk)["toolsets"] == [toolset.pk]
    scripted_model.script.append(say("Hello."))
    drive(post(session, user))
    offered = {t["function"]["name"]: t["function"] for t in scripted_model.tools[0]}
    assert {
        "workspace__write_file",
        "workspace__read_file",
        "workspace__list_files",
        "workspace__delete_file",
    } <= set(offered)
    assert offered["workspace__write_file"]["parameters"]["required"] == ["path", "content"]
    # Only deleting asks a person first.
    asking = {n for n, f in offered.items() if f["description"].endswith(tool_offers.ASKS_NOTE)}
    assert {n for n in asking if n.startswith("workspace__")} == {"workspace__delete_file"}


def test_a_session_can_switch_the_workspace_off(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[], user=user)
    scripted_model.script.extend(
        [tool_calls(call("workspace__write_file", call_id="w", path="a.md", content="x")), "No."]
    )
    drive(post(session, user))
    assert not any("workspace__" in t["function"]["name"] for t in scripted_model.tools[0])
    assert result_of(session, "w").startswith("Error: there is no tool named 'workspace__")
    assert not WorkspaceFile.objects.exists()


def test_staff_can_turn_the_workspace_off_everywhere(
    session: ChatSession, user: Any, staff: Any, scripted_model: ScriptedModel
) -> None:
    toolset = Toolset.objects.get(name="workspace")
    services.toolset_update(toolset_id=toolset.pk, user=staff, enabled=False)
    scripted_model.script.append(say("Hello."))
    drive(post(session, user))
    assert not any("workspace__" in t["function"]["name"] for t in scripted_model.tools[0])
    later = services.session_create(owner=user)
    assert selectors.session_toolset_ids(session_id=later.pk) == []


# --- write, read, list ------------------------------------------------------------------------


def test_files_are_written_listed_and_read_without_asking(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(
                call(WRITE, call_id="w1", path="notes/day-1.md", content="# Day 1"),
                call(WRITE, call_id="w2", path="budget.csv", content="a,b\n1,2\n"),
            ),
            tool_calls(call("workspace__list_files", call_id="l")),
            tool_calls(call("workspace__read_file", call_id="r", path="notes/day-1.md")),
            say("Both files are ready."),
        ]
    )
    run = drive(post(session, user))

    assert run.status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "w1") == (
        "Wrote notes/day-1.md (7 bytes). People can download it from the session's files."
    )
    listing = result_of(session, "l")
    assert listing.startswith("Files in the workspace:\n- budget.csv (8 bytes")
    assert "- notes/day-1.md (7 bytes" in listing
    assert result_of(session, "r") == "# Day 1"
    assert stored(session, "budget.csv") == "a,b\n1,2\n"
    file = WorkspaceFile.objects.get(session=session, path="notes/day-1.md")
    assert file.produced_by_id == run.pk and file.size == 7
    for call_id in ("w1", "w2", "l", "r"):
        done = record(session, call_id)
        assert done.status == ToolCall.Status.SUCCEEDED and done.decided_by is None
        assert done.duration_ms is not None and done.finished_at is not None
    assert record(session, "r").read_only and not record(session, "w1").read_only


def test_writing_again_replaces_the_file(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(call("workspace__write_file", call_id="a", path="x.md", content="first")),
            tool_calls(call("workspace__write_file", call_id="b", path="x.md", content="second!")),
            say("Done."),
        ]
    )
    drive(post(session, user))
    assert paths(session) == ["x.md"]
    assert stored(session, "x.md") == "second!"
    assert WorkspaceFile.objects.get(session=session).size == 7


def test_reading_or_deleting_a_missing_file_says_what_exists(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.workspace_file_write(session_id=session.pk, path="here.md", content="hi")
    scripted_model.script.extend(
        [tool_calls(call("workspace__read_file", call_id="r", path="gone.md")), say("Hm.")]
    )
    drive(post(session, user))
    text = result_of(session, "r")
    assert text.startswith("Error: the workspace has no file 'gone.md'.")
    assert "- here.md (2 bytes" in text
    assert record(session, "r").status == ToolCall.Status.FAILED


def test_an_empty_workspace_lists_as_empty(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend([tool_calls(call("workspace__list_files", call_id="l")), "Ok."])
    drive(post(session, user))
    assert result_of(session, "l") == "The workspace is empty."


def test_a_long_file_reaches_the_model_cut(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    settings.PLANBOARD_TOOL_OUTPUT_LIMIT = 100
    services.workspace_file_write(session_id=session.pk, path="long.txt", content="y" * 5000)
    scripted_model.script.extend(
        [tool_calls(call("workspace__read_file", call_id="r", path="long.txt")), say("Long.")]
    )
    drive(post(session, user))
    text = result_of(session, "r")
    assert text.startswith("y" * 100 + "\n\n[Cut: long.txt has 5000 characters")


# --- deleting needs a person ------------------------------------------------------------------


def test_a_delete_waits_for_approval_then_runs_once(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.workspace_file_write(session_id=session.pk, path="old.md", content="old")
    scripted_model.script.append(
        tool_calls(call("workspace__delete_file", call_id="d", path="old.md"))
    )
    run = drive(post(session, user))
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert record(session, "d").status == ToolCall.Status.PENDING
    assert paths(session) == ["old.md"]  # nothing happens while it waits
    pending = selectors.session_snapshot(session_id=session.pk)["pending_tool_calls"]
    assert [c["tool_name"] for c in pending] == ["workspace__delete_file"]

    services.tool_call_decide(
        session_id=session.pk, tool_call_id="d", user=user, decision="approve"
    )
    scripted_model.script.append(say("Deleted it."))
    run = drive(run)
    assert run.status == AgentRun.Status.SUCCEEDED
    assert paths(session) == []
    assert result_of(session, "d") == "Deleted old.md."
    done = record(session, "d")
    assert (done.status, done.decided_by_id) == (ToolCall.Status.SUCCEEDED, user.pk)
    assert drive(run).status == AgentRun.Status.SUCCEEDED  # redelivered: nothing again
    assert Message.objects.filter(session=session, tool_call_id="d").count() == 1


def test_a_denied_delete_keeps_the_file(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.workspace_file_write(session_id=session.pk, path="keep.md", content="keep")
    scripted_model.script.append(
        tool_calls(call("workspace__delete_file", call_id="d", path="keep.md"))
    )
    run = drive(post(session, user))
    services.tool_call_decide(
        session_id=session.pk, tool_call_id="d", user=user, decision="deny", note="Keep it."
    )
    scripted_model.script.append(say("I kept it."))
    assert drive(run).status == AgentRun.Status.SUCCEEDED
    assert paths(session) == ["keep.md"] and stored(session, "keep.md") == "keep"
    assert result_of(session, "d") == f"{external_tools.DENIED} Their note: Keep it."
    assert record(session, "d").status == ToolCall.Status.DENIED


def test_staff_can_let_deletes_run_without_asking(
    session: ChatSession, user: Any, staff: Any, scripted_model: ScriptedModel
) -> None:
    toolset = Toolset.objects.get(name="workspace")
    services.toolset_update(
        toolset_id=toolset.pk, user=staff, tool_policies={"delete_file": "auto"}
    )
    services.workspace_file_write(session_id=session.pk, path="tmp.md", content="x")
    scripted_model.script.extend(
        [tool_calls(call("workspace__delete_file", call_id="d", path="tmp.md")), "Gone."]
    )
    assert drive(post(session, user)).status == AgentRun.Status.SUCCEEDED
    assert paths(session) == []


# --- refused calls ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.md", "must not contain '.' or '..'"),
        ("notes/../../x.md", "must not contain '.' or '..'"),
        ("/etc/passwd", "not absolute"),
        ("C:/x.md", "not absolute"),
        ("a\\b.md", "separates folders with '/'"),
        ("a//b.md", "empty part"),
        ("notes/", "empty part"),
        (".env", "not allowed"),
        ("-rf", "not allowed"),
        ("my file.md", "not allowed"),
        ("caf\u00e9.md", "not allowed"),
        ("a/b/c/d/e/f.md", "at most 5 parts"),
        ("x" * 201, "the limit is 200"),
        ("", "must not be empty"),
    ],
)
def test_bad_paths_are_refused_as_errors(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, path: str, message: str
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(call("workspace__write_file", call_id="w", path=path, content="x")),
            say("I could not."),
        ]
    )
    assert drive(post(session, user)).status == AgentRun.Status.SUCCEEDED
    text = result_of(session, "w")
    assert text.startswith("Error: 'path'") and message in text
    assert record(session, "w").status == ToolCall.Status.FAILED
    assert not WorkspaceFile.objects.exists()
    assert default_storage.listdir("")[1] == []  # nothing stored either


def test_wrong_arguments_are_refused_as_errors(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(
                call("workspace__write_file", call_id="a", path="a.md"),
                call("workspace__write_file", call_id="b", path="b.md", content=["x"]),
                call("workspace__write_file", call_id="c", path=7, content="x"),
                call("workspace__list_files", call_id="d", recursive=True),
            ),
            say("Oops."),
        ]
    )
    drive(post(session, user))
    assert result_of(session, "a") == "Error: 'content' must be text."
    assert result_of(session, "b") == "Error: 'content' must be text."
    assert result_of(session, "c").startswith("Error: 'path' must be text")
    assert result_of(session, "d") == "Error: list_files takes no argument named 'recursive'."
    assert not WorkspaceFile.objects.exists()


def test_files_over_the_size_limit_are_refused(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    settings.PLANBOARD_WORKSPACE_FILE_LIMIT = 10
    scripted_model.script.extend(
        [
            tool_calls(
                call("workspace__write_file", call_id="ok", path="ok.txt", content="x" * 10),
                # Five characters, eleven bytes in UTF-8: the limit counts bytes.
                call("workspace__write_file", call_id="big", path="big.txt", content="京都京都x"),
            ),
            say("One was too big."),
        ]
    )
    drive(post(session, user))
    assert result_of(session, "ok").startswith("Wrote ok.txt (10 bytes)")
    assert result_of(session, "big") == (
        "Error: 'content' is 13 bytes; a workspace file may hold at most 10 bytes."
    )
    assert paths(session) == ["ok.txt"]


def test_the_number_of_files_is_limited(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    settings.PLANBOARD_WORKSPACE_MAX_FILES = 2
    for name in ("a.md", "b.md"):
        services.workspace_file_write(session_id=session.pk, path=name, content=name)
    scripted_model.script.extend(
        [
            tool_calls(
                call("workspace__write_file", call_id="c", path="c.md", content="c"),
                call("workspace__write_file", call_id="a", path="a.md", content="again"),
            ),
            say("Full."),
        ]
    )
    drive(post(session, user))
    assert result_of(session, "c").startswith("Error: The workspace holds 2 files already")
    assert result_of(session, "a").startswith("Wrote a.md")  # replacing one still works
    assert paths(session) == ["a.md", "b.md"]


# --- crash safety -----------------------------------------------------------------------------


def test_a_write_cut_off_by_a_crash_is_done_once_on_resume(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, monkeypatch: Any
) -> None:
    """The file and the call's result commit together: a worker that dies in between leaves
    neither, so the resumed run simply does the call (a remote tool would be `interrupted`)."""
    scripted_model.script.append(
        tool_calls(call("workspace__write_file", call_id="r", path="plan.md", content="v1"))
    )
    real = services.tool_call_answer

    def die(**kwargs: Any) -> Any:
        raise SystemExit("the worker died")

    monkeypatch.setattr(services, "tool_call_answer", die)
    run = post(session, user)
    with pytest.raises(SystemExit):
        drive(run)
    monkeypatch.setattr(services, "tool_call_answer", real)
    assert record(session, "r").status == ToolCall.Status.RUNNING
    assert paths(session) == []  # rolled back with the missing result
    AgentRun.objects.filter(pk=run.pk).update(lease_expires_at=None, lease_owner="")

    scripted_model.script.append(say("Written."))
    assert drive(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "r").startswith("Wrote plan.md")
    assert record(session, "r").status == ToolCall.Status.SUCCEEDED
    assert paths(session) == ["plan.md"] and stored(session, "plan.md") == "v1"


def test_every_offered_tool_has_a_handler() -> None:
    assert set(agent_workspace._HANDLERS) == workspace.TOOL_NAMES


# --- emptying a file is deleting its content --------------------------------------------------


@pytest.mark.parametrize("empty", ["", "   \n"])
def test_emptying_a_file_waits_for_approval_like_a_delete(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, empty: str
) -> None:
    services.workspace_file_write(session_id=session.pk, path="notes.md", content="Day 1: temples")
    scripted_model.script.append(
        tool_calls(call(WRITE, call_id="e", path="notes.md", content=empty))
    )
    run = drive(post(session, user))

    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert record(session, "e").status == ToolCall.Status.PENDING
    assert stored(session, "notes.md") == "Day 1: temples"  # nothing happens while it waits

    services.tool_call_decide(
        session_id=session.pk, tool_call_id="e", user=user, decision="approve"
    )
    scripted_model.script.append(say("Emptied it."))
    assert drive(run).status == AgentRun.Status.SUCCEEDED
    assert stored(session, "notes.md") == empty
    assert record(session, "e").decided_by_id == user.pk


def test_a_denied_emptying_keeps_the_content(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.workspace_file_write(session_id=session.pk, path="notes.md", content="keep me")
    scripted_model.script.append(tool_calls(call(WRITE, call_id="e", path="notes.md", content="")))
    run = drive(post(session, user))
    services.tool_call_decide(session_id=session.pk, tool_call_id="e", user=user, decision="deny")
    scripted_model.script.append(say("Kept."))
    assert drive(run).status == AgentRun.Status.SUCCEEDED
    assert stored(session, "notes.md") == "keep me"
    assert result_of(session, "e").startswith(external_tools.DENIED)


def test_empty_writes_that_discard_nothing_do_not_ask(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.workspace_file_write(session_id=session.pk, path="blank.md", content="")
    scripted_model.script.extend(
        [
            tool_calls(
                call(WRITE, call_id="new", path="new.md", content=""),
                call(WRITE, call_id="blank", path="blank.md", content=""),
                call(WRITE, call_id="fill", path="blank.md", content="now with text"),
            ),
            say("Done."),
        ]
    )
    assert drive(post(session, user)).status == AgentRun.Status.SUCCEEDED
    assert {record(session, c).status for c in ("new", "blank", "fill")} == {
        ToolCall.Status.SUCCEEDED
    }
    assert stored(session, "blank.md") == "now with text"


def test_emptying_follows_the_delete_policy_staff_set(
    session: ChatSession, user: Any, staff: Any, scripted_model: ScriptedModel
) -> None:
    toolset = Toolset.objects.get(name="workspace")
    services.workspace_file_write(session_id=session.pk, path="a.md", content="text")
    services.toolset_update(
        toolset_id=toolset.pk, user=staff, tool_policies={"delete_file": "auto"}
    )
    scripted_model.script.extend(
        [tool_calls(call(WRITE, call_id="e1", path="a.md", content="")), "Ok."]
    )
    assert drive(post(session, user)).status == AgentRun.Status.SUCCEEDED
    assert stored(session, "a.md") == ""

    services.workspace_file_write(session_id=session.pk, path="a.md", content="text again")
    services.toolset_update(
        toolset_id=toolset.pk, user=staff, tool_policies={"delete_file": "never"}
    )
    scripted_model.script.extend(
        [tool_calls(call(WRITE, call_id="e2", path="a.md", content="")), "Ok."]
    )
    assert drive(post(session, user)).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "e2").startswith("Error:")
    assert "delet" in result_of(session, "e2")
    assert stored(session, "a.md") == "text again"


def test_a_write_that_would_empty_a_file_by_the_time_it_runs_is_not_run_unasked(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    """Calls held behind one that waits are recorded at once; when they finally run, a write
    that now would empty a file with content is refused rather than run without approval."""
    services.workspace_file_write(session_id=session.pk, path="old.md", content="old")
    scripted_model.script.append(
        tool_calls(
            call("workspace__delete_file", call_id="d", path="old.md"),
            call(WRITE, call_id="fill", path="a.md", content="precious"),
            call(WRITE, call_id="wipe", path="a.md", content=""),
        )
    )
    run = drive(post(session, user))
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    services.tool_call_decide(
        session_id=session.pk, tool_call_id="d", user=user, decision="approve"
    )
    scripted_model.script.append(say("Done."))
    assert drive(run).status == AgentRun.Status.SUCCEEDED

    assert stored(session, "a.md") == "precious"
    assert result_of(session, "wipe").startswith("Error:")
    assert record(session, "wipe").status == ToolCall.Status.FAILED
