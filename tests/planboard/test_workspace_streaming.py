"""A workspace file is never read whole: downloads stream it in chunks (at most the size its
row records), and the agent's `read_file` reads only as far as the model's share, counting
the rest as it goes."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from django.core.files.storage import default_storage

from agents import workspace as agent_workspace
from planboard import selectors, services, workspace
from planboard.models import AgentRun, ChatSession, WorkspaceFile
from tests.support.memory import peak_of
from tests.support.web import api_client_for, client_for

pytestmark = pytest.mark.django_db

SIZE = 4_000_000


@pytest.fixture
def big(chat_session: ChatSession, settings: Any) -> WorkspaceFile:
    settings.PLANBOARD_WORKSPACE_FILE_LIMIT = 5_000_000
    return services.workspace_file_write(
        session_id=chat_session.pk, path="big.txt", content="é" + "z" * (SIZE - 3) + "\n"
    )


def drained(response: Any) -> tuple[int, int]:
    """(bytes, largest chunk) of a streamed body, read without keeping it (the test client
    closes the response once it is read through)."""
    total = largest = 0
    for chunk in response.streaming_content:
        total += len(chunk)
        largest = max(largest, len(chunk))
    return total, largest


def test_api_downloads_stream_in_chunks(
    big: WorkspaceFile, chat_session: ChatSession, user: Any
) -> None:
    client = api_client_for(user)
    url = f"/api/sessions/{chat_session.pk}/files/big.txt"
    drained(client.get(url))  # the first request imports and builds what the API needs
    response, peak = peak_of(lambda: client.get(url))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Length"] == str(SIZE)
    assert response["Content-Disposition"] == 'attachment; filename="big.txt"'
    (total, largest), read_peak = peak_of(lambda: drained(response))
    assert total == SIZE and largest <= 65536
    assert max(peak, read_peak) < 1_500_000, (peak, read_peak)


def test_web_downloads_stream_and_stop_at_the_recorded_size(
    big: WorkspaceFile, chat_session: ChatSession, user: Any
) -> None:
    # The stored blob grew behind the row's back: only the recorded size is served.
    with default_storage.open(big.storage_name, "ab") as handle:
        handle.write(b"!" * 100_000)
    client = client_for(user)
    response = client.get(f"/sessions/{chat_session.pk}/files/big.txt")
    assert response.status_code == 200 and response.streaming
    body = response.getvalue()
    assert len(body) == SIZE and body.endswith(b"z\n")


def test_under_asgi_downloads_stream_too(big: WorkspaceFile) -> None:
    """Daphne serves a response through `__aiter__`; Django reads a plain synchronous
    iterator there into one list first (with a warning), which must not happen."""
    response = workspace.file_response(big, selectors.workspace_file_open(big))

    async def serve() -> tuple[int, int]:
        total = chunks = 0
        async for chunk in response:
            total += len(chunk)
            chunks += 1
        return total, chunks

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (total, chunks), peak = peak_of(lambda: asyncio.run(serve()))
    response.close()
    assert total == SIZE and chunks == -(-SIZE // 65536)
    assert peak < 1_500_000, f"peak {peak} bytes for a {SIZE}-byte file"


def test_read_file_reads_only_what_the_model_gets(
    big: WorkspaceFile, chat_session: ChatSession, user: Any, settings: Any
) -> None:
    settings.PLANBOARD_TOOL_OUTPUT_LIMIT = 1000
    run = AgentRun.objects.create(session=chat_session, status=AgentRun.Status.RUNNING)
    output, peak = peak_of(
        lambda: agent_workspace.call_tool(run=run, tool="read_file", arguments={"path": "big.txt"})
    )
    assert output.ok
    assert output.text.startswith("é" + "z" * 999 + "\n\n[Cut: big.txt has")
    assert f"has {SIZE - 1} characters; only the first 1000 are shown" in output.text
    assert peak < 1_500_000, f"peak {peak} bytes for a {SIZE}-byte file"
