"""At connect time: every connection to a toolset's server (redirects included) and every call
of a profile's own api_base passes the address rule on the address actually resolved, and URLs
with credentials never reach a log. Only 127.0.0.1/32 is allowed (tests/conftest.py); the
servers that must never be reached listen on 127.0.0.2."""

from __future__ import annotations

import io
import logging
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agents import llm
from agents.mcp import calls
from agents.outbound_http import checked_client
from planboard import outbound, services
from planboard.exceptions import PlanError
from planboard.log_redaction import RedactUrlCredentials
from planboard.models import Toolset
from tests.support.dns import FakeDNS
from tests.support.env import settings_probe
from tests.support.mcp_servers import API_KEY, HttpServer
from tests.support.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


class Recorder:
    """An HTTP server that answers every request with `status` (and `location`), and records
    the paths it was asked for."""

    def __init__(self, host: str, *, status: int = 200, location: str = "") -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.paths.append(self.path)
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def inside() -> Iterator[Recorder]:
    """A server on 127.0.0.2: outside the allow-list, so nothing may ever reach it."""
    server = Recorder("127.0.0.2")
    yield server
    server.close()


@pytest.fixture
def no_system_dns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Fails any lookup that bypasses planboard.outbound (it would be a real DNS query)."""
    asked: list[Any] = []

    def refuse(host: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "the system resolver is off in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return asked


def remote(staff: Any, url: str, *, name: str = "remote") -> Toolset:
    return services.toolset_create(
        user=staff, name=name, kind="http", url=url, headers={"X-Api-Key": API_KEY}
    )


# --- toolsets ----------------------------------------------------------------------------------


def test_an_address_refused_since_saving_is_not_reached(
    staff: Any, mcp_http: HttpServer, settings: Any
) -> None:
    toolset = remote(staff, mcp_http.url)
    assert calls.call_tool(toolset, "echo", {"text": "hi"}).text == "hi"
    reached = len(mcp_http.seen_keys)
    settings.PLANBOARD_TOOL_ALLOWED_NETWORKS = []  # the operator closed loopback
    output = calls.call_tool(toolset, "echo", {"text": "hi"})
    assert not output.ok
    assert output.text.startswith("Error: toolset 'remote': ")
    assert "127.0.0.1 is a loopback address" in output.text
    assert len(mcp_http.seen_keys) == reached


async def test_connections_go_to_the_address_checked(
    fake_dns: FakeDNS, no_system_dns: list[Any]
) -> None:
    target = Recorder("127.0.0.1", status=204)
    fake_dns.names["tools.test"] = ["127.0.0.1"]
    try:
        async with checked_client(headers={}, timeout=10) as client:
            response = await client.get(f"http://tools.test:{target.server.server_address[1]}/x")
    finally:
        target.close()
    assert response.status_code == 204 and target.paths == ["/x"]
    # Resolved once, by the checking backend; httpx never asked DNS on its own.
    assert fake_dns.asked == ["tools.test"] and no_system_dns == []


def test_a_name_rebound_inside_after_saving_is_refused(
    staff: Any, fake_dns: FakeDNS, no_system_dns: list[Any], inside: Recorder
) -> None:
    port = inside.server.server_address[1]
    fake_dns.names["rebind.test"] = ["127.0.0.1"]
    toolset = remote(staff, f"http://rebind.test:{port}/mcp")
    fake_dns.names["rebind.test"] = ["127.0.0.2"]  # the DNS answer changes after the check
    output = calls.call_tool(toolset, "echo", {"text": "hi"})
    assert not output.ok
    assert "rebind.test resolves to 127.0.0.2, which is a loopback address" in output.text
    with pytest.raises(PlanError, match=re.escape("127.0.0.2, which is a loopback")):
        services.toolset_refresh_tools(toolset_id=toolset.pk)
    assert inside.paths == [] and no_system_dns == []


async def test_redirects_are_checked_like_the_first_request(inside: Recorder) -> None:
    outside = Recorder("127.0.0.1", status=307, location=f"{inside.url}/latest/meta-data/")
    try:
        async with checked_client(headers={}, timeout=10) as client:
            with pytest.raises(outbound.AddressRefused, match=re.escape("127.0.0.2 is a loopback")):
                await client.post(f"{outside.url}/mcp", follow_redirects=True)
    finally:
        outside.close()
    assert outside.paths == ["/mcp"] and inside.paths == []


async def test_environment_proxies_are_not_used(
    inside: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy would make the connection somewhere else than the address checked.
    monkeypatch.setenv("HTTP_PROXY", inside.url)
    monkeypatch.setenv("ALL_PROXY", inside.url)
    target = Recorder("127.0.0.1", status=204)
    try:
        async with checked_client(headers={}, timeout=10) as client:
            assert (await client.get(f"{target.url}/ok")).status_code == 204
    finally:
        target.close()
    assert target.paths == ["/ok"] and inside.paths == []


# --- a profile's api_base ----------------------------------------------------------------------


@pytest.fixture
def model_inside(settings: Any) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(host="127.0.0.2")
    fake.thread.start()
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_a_profiles_own_api_base_is_checked_before_the_call(
    model_inside: FakeOpenAI, settings: Any
) -> None:
    model_inside.answer("should never be asked")
    with pytest.raises(llm.LLMError, match=re.escape("127.0.0.2 is a loopback address")) as refused:
        llm.complete(
            messages=[{"role": "user", "content": "hi"}],
            model="openai/gpt-4o-mini",
            api_base=model_inside.base_url,
            api_key="sk-test",
        )
    assert not refused.value.transient and model_inside.requests == []


def test_the_operators_own_api_base_is_trusted(model_inside: FakeOpenAI, settings: Any) -> None:
    # PLANBOARD_LLM_API_BASE is the operator's choice (Ollama next door), not staff input.
    settings.PLANBOARD_LLM_API_BASE = model_inside.base_url
    model_inside.answer("hello from next door")
    result = llm.complete(
        messages=[{"role": "user", "content": "hi"}], model="openai/gpt-4o-mini", api_key="sk"
    )
    assert result.content == "hello from next door" and len(model_inside.requests) == 1


# --- logs --------------------------------------------------------------------------------------


def test_urls_in_logs_lose_their_credentials(
    staff: Any, mcp_http: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "q-secret-5d4c3b2a"
    handlers = [
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(f, RedactUrlCredentials) for f in handler.filters)
    ]
    assert handlers, "settings.LOGGING installs the filter on its handlers"
    console = handlers[0]
    assert isinstance(console, logging.StreamHandler)
    written = io.StringIO()
    previous = console.setStream(written)
    caplog.set_level(logging.DEBUG)
    try:
        credentialed = mcp_http.url.replace("http://", "http://bot:pw-9z8y7x@") + f"?key={secret}"
        toolset = remote(staff, credentialed)
        assert calls.call_tool(toolset, "echo", {"text": "logged"}).ok
    finally:
        console.setStream(previous)
    log = written.getvalue()
    assert "HTTP Request: POST" in log and "key=REDACTED" in log
    assert secret not in log and "pw-9z8y7x" not in log
    # Handlers after it (here pytest's) get the redacted record too.
    assert "key=REDACTED" in caplog.text and secret not in caplog.text


def test_tracebacks_in_logs_lose_url_credentials() -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed: %s", ("see below",), None)
    try:
        raise RuntimeError("GET https://u:p4ss-word@h.test/x?token=t0ken-123 failed")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    assert RedactUrlCredentials().filter(record)
    text = logging.Formatter().format(record)
    assert "p4ss-word" not in text and "t0ken-123" not in text
    assert "https://REDACTED:REDACTED@h.test/x?token=REDACTED" in text


CELERY_LOGS = """
import io, logging
from planboard.celery import app
stream = io.StringIO()
app.log.setup_logging_subsystem(loglevel="INFO", logfile=stream, colorize=False)
logging.getLogger("httpx2").info(
    'HTTP Request: %s %s "HTTP/1.1 200 OK"', "POST", "https://bot:pw-1a2b@t.test/mcp?key=k-9z8y"
)
logging.getLogger("celery.task").warning("GET https://t.test/sse?token=t-7x6w failed")
result = stream.getvalue()
"""


def test_a_celery_workers_own_log_handlers_redact_too() -> None:
    # A worker replaces the root logger's handlers with its own (worker_hijack_root_logger).
    written = settings_probe({}, CELERY_LOGS)
    assert "https://REDACTED:REDACTED@t.test/mcp?key=REDACTED" in written
    assert "token=REDACTED" in written
    assert not {"pw-1a2b", "k-9z8y", "t-7x6w"} & set(re.findall(r"[\w-]+", written))
