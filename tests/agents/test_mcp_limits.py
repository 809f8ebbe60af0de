"""How much an MCP server can make a worker read (byte caps): a result larger than
`PLANBOARD_MCP_MESSAGE_MAX_BYTES` is given up while it arrives, over stdio and over HTTP (SSE
and plain JSON answers), so the worker's memory stays bounded; what the model gets is cut
with a note; binary content is described, never decoded; a listing stops once the server is
over a toolset limit; a chatty server's stderr is read from its end only.

Memory is measured with tracemalloc in this process; the servers run in processes of their
own, so only the client's memory counts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types
import pytest

from agents import mcp_limits
from agents.mcp import calls, listing
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset
from tests.support.mcp_servers import http_server_process, stdio_toolset
from tests.support.memory import peak_of

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


@pytest.fixture
def small_messages(settings: Any) -> None:
    settings.PLANBOARD_MCP_MESSAGE_MAX_BYTES = MIB


@pytest.fixture
def local(superuser: Any) -> Toolset:
    return stdio_toolset(superuser, refresh=False)


@pytest.fixture(params=[False, True], ids=["sse", "json"])
def remote(request: Any, superuser: Any) -> Iterator[Toolset]:
    with http_server_process(json_response=request.param) as url:
        name = "remote-json" if request.param else "remote-sse"
        yield services.toolset_create(user=superuser, name=name, kind="http", url=url)


# --- results larger than a message may be ----------------------------------------------------


def test_a_huge_stdio_result_is_given_up_with_bounded_memory(
    local: Toolset, small_messages: None
) -> None:
    output, peak = peak_of(lambda: calls.call_tool(local, "huge", {"size": 40 * MIB}))
    assert output.duration_ms < 30_000  # given up at once, not at the call's timeout
    assert not output.ok
    assert output.text.startswith("Error: toolset 'local': the server sent a message larger")
    assert "PLANBOARD_MCP_MESSAGE_MAX_BYTES = 1048576" in output.text
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB for a 40 MiB answer"
    # The next call starts afresh and works.
    assert calls.call_tool(local, "echo", {"text": "still fine"}).text == "still fine"


def test_a_huge_http_result_is_given_up_with_bounded_memory(
    remote: Toolset, small_messages: None
) -> None:
    output, peak = peak_of(lambda: calls.call_tool(remote, "huge", {"size": 40 * MIB}))
    assert not output.ok
    assert output.text.startswith(f"Error: toolset '{remote.name}': the server sent")
    assert "PLANBOARD_MCP_MESSAGE_MAX_BYTES = 1048576" in output.text
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB for a 40 MiB answer"
    assert calls.call_tool(remote, "echo", {"text": "still fine"}).text == "still fine"


def test_a_result_within_the_limit_reaches_the_model_cut_with_a_note(
    local: Toolset, settings: Any
) -> None:
    settings.PLANBOARD_TOOL_OUTPUT_LIMIT = 1000
    # (The message carries the text twice: as text content and as structured content.)
    output = calls.call_tool(local, "huge", {"size": MIB})
    assert output.ok
    assert output.text.startswith("x" * 1000 + "\n\n[Output cut:")
    assert f"the tool returned {MIB} characters; only the first 1000 are shown" in output.text


# --- what the model gets of each kind of content ----------------------------------------------


def test_binary_content_is_described_and_large_json_encoded_only_as_far_as_shown(
    settings: Any,
) -> None:
    settings.PLANBOARD_TOOL_OUTPUT_LIMIT = 500
    image = mcp_types.ImageContent(type="image", data="A" * 4_000_000, mime_type="image/png")
    blob = mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.BlobResourceContents(
            uri="file:///data.bin", blob="B" * 400, mime_type="application/octet-stream"
        ),
    )
    text = mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="hello " * 10),
    )
    result = mcp_types.CallToolResult(content=[image, blob, text])
    rendered = mcp_limits.render_result(result, keep=500)
    assert rendered.text.splitlines()[:2] == [
        "[image (image/png, about 3000000 bytes) omitted]",
        "[resource file:///data.bin (application/octet-stream, about 300 bytes) omitted]",
    ]
    assert "hello hello" in rendered.text and "AAAA" not in rendered.text

    # Structured content only: a large value is encoded only as far as the model's share.
    big = {"rows": [{"n": n, "text": "y" * 100} for n in range(50_000)]}
    structured = mcp_types.CallToolResult(content=[], structured_content=big)
    (rendered, peak) = peak_of(lambda: mcp_limits.render_result(structured, keep=500))
    assert len(rendered.text) == 500 and not rendered.exact
    assert peak < MIB  # the whole value as JSON would be over 5 MB
    shown = mcp_limits.cut(rendered.text, total=rendered.total, exact=rendered.exact)
    assert shown.startswith('{"rows": [{"n": 0')
    assert shown.endswith("only the first 500 are shown.]") and "returned more than" in shown


# --- HTTP bodies, at the transport ---------------------------------------------------------------


async def test_http_bodies_are_counted_and_compressed_ones_refused() -> None:
    limit = mcp_limits.ReadLimit(max_bytes=MIB)
    seen: list[str | None] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("accept-encoding"))
        if request.url.path == "/gzip":
            return httpx2.Response(200, headers={"content-encoding": "gzip"}, content=b"\x1f\x8b")
        if request.url.path == "/declared":
            return httpx2.Response(200, headers={"content-length": str(50 * MIB)}, content=b"")

        async def endless() -> Any:
            while True:
                yield b"z" * 65536

        return httpx2.Response(200, content=endless())

    hooks = {"request": [limit.on_request], "response": [limit.on_response]}
    transport = httpx2.MockTransport(answer)
    async with httpx2.AsyncClient(transport=transport, event_hooks=hooks) as client:
        for path in ("/gzip", "/declared", "/endless"):
            with pytest.raises(mcp_limits.MessageTooLarge):
                await client.get(f"http://tools.test{path}")
    assert seen == ["identity"] * 3
    assert limit.exceeded and "larger than 1048576 bytes" in limit.reason


# --- listings --------------------------------------------------------------------------------


def test_a_listing_stops_once_the_server_is_over_a_toolset_limit(
    local: Toolset, settings: Any
) -> None:
    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 3
    found = listing.discover_tools(local)
    assert len(found) == 4  # one more than the limit: enough to refuse it
    with pytest.raises(PlanError) as refused:
        services.toolset_refresh_tools(toolset_id=local.pk)
    assert refused.value.code == "toolset_too_large"

    settings.PLANBOARD_TOOLSET_MAX_TOOLS = 200
    settings.PLANBOARD_TOOL_SCHEMA_MAX_BYTES = 120
    found = listing.discover_tools(local)
    oversized = [t for t in found if t.get("too_large")]
    assert oversized and all(set(t) == {"name", "too_large"} for t in oversized)
    result = services.toolset_refresh_tools(toolset_id=local.pk)
    assert sorted(result.too_large) == sorted(t["name"] for t in oversized)
    assert "weight" not in str(found)


# --- stderr -------------------------------------------------------------------------------------


def test_a_server_flooding_stderr_is_quoted_from_its_end_only(superuser: Any) -> None:
    noisy = services.toolset_create(
        user=superuser,
        name="noisy",
        kind="stdio",
        command=sys.executable,
        args=["-c", "import sys; sys.stderr.write('x' * 30_000_000 + '\\nmy last words\\n')"],
    )
    output, peak = peak_of(lambda: calls.call_tool(noisy, "echo", {"text": "hi"}))
    assert not output.ok and output.text.endswith("my last words")
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB for 30 MB of stderr"
