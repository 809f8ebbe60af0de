"""The MCP client against real servers built with the official SDK: over stdio (a child process
it starts) and over streamable HTTP. Every failure is `Error: …` text naming the toolset."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agents.mcp import calls, listing
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset
from tests.support.mcp_servers import HttpServer, http_toolset, notes_written, stdio_toolset
from tests.support.mcp_test_server import FORGED_HINT

pytestmark = pytest.mark.django_db


@pytest.fixture
def local(superuser: Any, tmp_path: Path) -> Toolset:
    return stdio_toolset(
        superuser, notes=tmp_path / "notes.txt", refresh=False, env={"TOKEN": "tok-9f8e7d6c"}
    )


def program(superuser: Any, name: str, command: str, *args: str) -> Toolset:
    return services.toolset_create(
        user=superuser, name=name, kind="stdio", command=command, args=list(args)
    )


# --- discovery --------------------------------------------------------------------------------


def test_discovers_tools_with_their_schemas_and_read_only_hints(local: Toolset) -> None:
    tools = {t["name"]: t for t in listing.discover_tools(local)}
    assert {"echo", "add", "write_note", "crash", "slow", "huge", "weather"} <= set(tools)
    assert tools["echo"]["read_only"] is True and tools["write_note"]["read_only"] is False
    assert tools["add"]["description"] == "Add two whole numbers."
    schema = tools["add"]["input_schema"]
    assert schema["type"] == "object" and set(schema["required"]) == {"a", "b"}
    assert schema["properties"]["a"]["type"] == "integer"


def test_a_server_that_cannot_start_is_a_clear_error(superuser: Any) -> None:
    missing = program(superuser, "ghost", "/nonexistent/mcp-server")
    with pytest.raises(PlanError, match="toolset 'ghost': could not start its server") as error:
        listing.discover_tools(missing)
    assert error.value.code == "toolset_unreachable"
    output = calls.call_tool(missing, "echo", {"text": "hi"})
    assert not output.ok
    assert output.text.startswith("Error: toolset 'ghost': could not start its server")
    assert "No such file or directory" in output.text


def test_a_server_that_exits_at_once_is_a_clear_error(superuser: Any) -> None:
    quitter = program(
        superuser, "quitter", sys.executable, "-c", "import sys; print('bye', file=sys.stderr)"
    )
    output = calls.call_tool(quitter, "echo", {"text": "hi"})
    assert not output.ok
    assert output.text.startswith("Error: toolset 'quitter': the server stopped unexpectedly")
    assert "bye" in output.text  # what the server said on its way out


# --- calls over stdio -------------------------------------------------------------------------


def test_a_call_returns_the_tools_text(local: Toolset, tmp_path: Path) -> None:
    assert calls.call_tool(local, "add", {"a": 2, "b": 40}).text == "42"
    written = calls.call_tool(local, "write_note", {"text": "hello"})
    assert (written.ok, written.text) == (True, "noted: hello")
    assert notes_written(tmp_path / "notes.txt") == ["hello"]
    assert written.duration_ms > 0


def test_the_toolset_env_reaches_the_server_but_never_the_model(local: Toolset) -> None:
    assert calls.call_tool(local, "secret_length", {"name": "TOKEN"}).text == (
        "TOKEN has 12 characters"
    )
    # A server echoing a secret value: redacted before anyone stores or reads it.
    assert calls.call_tool(local, "reveal", {"name": "TOKEN"}).text == "[secret]"
    # Our own environment is not handed to tool servers.
    assert calls.call_tool(local, "secret_length", {"name": "DJANGO_SETTINGS_MODULE"}).text == (
        "DJANGO_SETTINGS_MODULE has 0 characters"
    )


def test_a_crash_mid_call_is_a_clear_error(local: Toolset) -> None:
    output = calls.call_tool(local, "crash", {})
    assert not output.ok
    assert output.text.startswith("Error: toolset 'local': the server stopped unexpectedly")
    assert "Its last words: about to crash" in output.text


def test_a_slow_call_times_out(local: Toolset, settings: Any) -> None:
    settings.PLANBOARD_TOOL_TIMEOUT = 1.5
    started = time.monotonic()
    output = calls.call_tool(local, "slow", {"seconds": 30})
    assert time.monotonic() - started < 15  # the server is stopped, not waited for
    assert not output.ok
    assert output.text == (
        "Error: toolset 'local': the tool 'slow' did not answer within 1.5 seconds; the call "
        "was abandoned (it may or may not have taken effect)."
    )


def test_unknown_tools_bad_arguments_and_tool_errors_are_errors(local: Toolset) -> None:
    unknown = calls.call_tool(local, "nope", {})
    assert not unknown.ok
    assert unknown.text.startswith("Error: toolset 'local': the tool 'nope' failed:")
    assert "Unknown tool" in unknown.text
    bad = calls.call_tool(local, "add", {"a": "two", "b": 1})
    assert not bad.ok and "toolset 'local'" in bad.text and "valid integer" in bad.text
    failed = calls.call_tool(local, "fail", {"reason": "disk full"})
    assert not failed.ok
    assert failed.text.startswith("Error: toolset 'local': the tool 'fail' failed:")


def test_huge_output_is_cut_with_a_note(local: Toolset, settings: Any) -> None:
    settings.PLANBOARD_TOOL_OUTPUT_LIMIT = 1000
    output = calls.call_tool(local, "huge", {"size": 50_000})
    assert output.ok
    assert output.text.startswith("x" * 1000 + "\n\n[Output cut:")
    assert "returned 50000 characters; only the first 1000 are shown" in output.text
    assert len(output.text) < 1200


def test_output_is_passed_on_as_data(local: Toolset) -> None:
    # The client neither runs nor hides it; the request builder neutralises hint tags.
    assert calls.call_tool(local, "weather", {}).text == FORGED_HINT


async def test_calls_work_from_inside_an_event_loop(local: Toolset) -> None:
    assert calls.call_tool(local, "echo", {"text": "from async"}).text == "from async"


# --- streamable HTTP --------------------------------------------------------------------------


def test_http_toolsets_send_their_headers(staff: Any, mcp_http: HttpServer) -> None:
    remote = http_toolset(staff, mcp_http)
    assert "echo" in {t["name"] for t in listing.discover_tools(remote)}
    assert calls.call_tool(remote, "echo", {"text": "over http"}).text == "over http"
    assert calls.call_tool(remote, "write_note", {"text": "remote"}).ok
    assert notes_written(mcp_http.notes) == ["remote"]
    assert mcp_http.seen_keys and set(mcp_http.seen_keys) == {"test-key-5f2c9e"}


def test_http_failures_are_clear_errors(staff: Any, mcp_http: HttpServer) -> None:
    keyless = services.toolset_create(user=staff, name="keyless", kind="http", url=mcp_http.url)
    output = calls.call_tool(keyless, "echo", {"text": "hi"})
    assert not output.ok
    assert output.text.startswith("Error: toolset 'keyless': the server refused: Server returned")
    gone = services.toolset_create(
        user=staff, name="gone", kind="http", url="http://127.0.0.1:9/mcp"
    )
    with pytest.raises(PlanError, match="toolset 'gone': the server could not be reached"):
        listing.discover_tools(gone)
    remote = http_toolset(staff, mcp_http, name="remote")
    unknown = calls.call_tool(remote, "nope", {})
    assert not unknown.ok and "toolset 'remote'" in unknown.text


def test_only_the_mcp_package_imports_the_sdk() -> None:
    root = Path(__file__).resolve().parents[2]
    importers = sorted(
        str(path.relative_to(root))
        for package in ("agents", "planboard")
        for path in (root / package).rglob("*.py")
        if any(
            line.startswith(("import mcp", "from mcp ", "from mcp."))
            for line in path.read_text().splitlines()
        )
    )
    assert importers and all(path.startswith("agents/mcp/") for path in importers)
