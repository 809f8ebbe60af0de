"""The boundary to MCP tool servers: the only module in Planboard that imports the `mcp` SDK.

A toolset (`planboard.models.Toolset`) is either a program started over stdio (the SDK's
`stdio_client`; it gets only the SDK's minimal environment plus the toolset's own `env`, never
ours) or a streamable-HTTP endpoint (sent the toolset's `headers`; every connection, redirects
included, goes only where `planboard.outbound` allows: agents/outbound_http.py). `opened`
starts or reaches the server and initializes a session. A run's calls use the session its chat
session keeps open with the server (`agents.mcp_sessions`, which builds on `opened` and
`call_on`); everything else here (`discover_tools`, `call_tool`, `acall_tool`) opens a fresh
connection, does one thing and closes it, so no state is shared with anyone's session.

`call_tool` never raises: server start failures, crashes, timeouts (`PLANBOARD_TOOL_TIMEOUT`
seconds for the whole call, server start included, the time a person takes to answer the
server's question — MCP elicitation, `Elicitor` — excluded), unknown tools and MCP error
results all come back as `Error: …` text naming the toolset. Output longer than
`PLANBOARD_TOOL_OUTPUT_LIMIT` characters is cut, with a note saying so. `discover_tools`
raises `PlanError` with the same kind of message (it is `settings.PLANBOARD_TOOL_DISCOVERER`).
How much a server can make us read, and hand to the model, is bounded (`agents.mcp_limits`).

The agent loop is synchronous: each use runs its own event loop (`asyncio.run`). Callers must
not hold a database transaction open across a call: a server may take a minute.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import math
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import IO, Any, TextIO, TypeVar
from urllib.parse import urlencode

import anyio
import anyio.lowlevel
import httpx2
from django.conf import settings
from mcp import ClientSession as ClientSession  # re-exported for agents.mcp_sessions
from mcp import StdioServerParameters
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, PKCEParameters
from mcp.client.context import ClientRequestContext
from mcp.client.session import ListRootsFnT, MessageHandlerFnT
from mcp.client.stdio import (
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _parse_line,
    _stop_server_process,
    get_default_environment,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import calculate_token_expiry
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    ErrorData,
    ListRootsResult,
    PaginatedRequestParams,
    PromptListChangedNotification,
    ResourceLink,
    ResourceListChangedNotification,
    Root,
    TextContent,
    TextResourceContents,
    ToolListChangedNotification,
)

from agents import mcp_limits
from agents.outbound_http import checked_client
from agents.redaction import redact_for
from planboard import outbound, services
from planboard.exceptions import PlanError
from planboard.models import Toolset
from planboard.services.tool_listing import (
    listing_bytes,
    max_catalog_items,
    max_tools,
    tool_schema_max_bytes,
    toolset_schema_max_bytes,
)
from planboard.url_secrets import redact_urls_in_text

logger = logging.getLogger(__name__)

T = TypeVar("T")
# Pages of tools/list followed at most (a server that pages forever is cut off).
MAX_TOOL_PAGES = 20
# How much of a crashed server's stderr an error message quotes.
STDERR_TAIL = 300


@dataclass(frozen=True)
class ToolOutput:
    """What a call gives the model (`text`), and whether the tool did its job (`ok`)."""

    text: str
    ok: bool
    duration_ms: int = 0
    # An OAuth toolset whose tokens changed during the call (refreshed; or `{}`: the provider
    # refused them and the person must connect again): stored by the caller, in a unit, only
    # over the stored tokens the call started from (`oauth_replaces`): another call may have
    # stored newer ones meanwhile (`services.toolset_oauth_tokens_store`).
    oauth_tokens: dict[str, Any] | None = None
    oauth_replaces: dict[str, Any] | None = None


def timeout_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_TOOL_TIMEOUT", 60))


# --- elicitation: a server asks a person something during a call (issue 24) -------------------


@dataclass(frozen=True)
class Elicited:
    """A server's `elicitation/create`, without the SDK's types: `mode` "form" (fill in
    `schema`) or "url" (open `url`; `elicitation_id` names it), and the server's `message`."""

    mode: str
    message: str
    schema: dict[str, Any]
    url: str = ""
    elicitation_id: str = ""


@dataclass(frozen=True)
class ElicitReply:
    """What the server is told: `action` accept (with `content` for a form), decline or
    cancel; or, with `error`, that its request was refused (a form we cannot show)."""

    action: str
    content: dict[str, Any] | None = None
    error: str = ""


def elicitation_seconds() -> float:
    """How long a server's question waits for a person (`PLANBOARD_ELICITATION_TIMEOUT`);
    then the server is told `decline`."""
    return float(getattr(settings, "PLANBOARD_ELICITATION_TIMEOUT", 600))


# Asked during a call; answers when a person did, the time ran out or the run stopped.
Elicitor = Callable[[Elicited], Awaitable[ElicitReply]]
# Told each progress notification the server sends during a call: progress, total (None when
# the server does not know it), the server's message (None: none). Called on the event loop.
Progress = Callable[[float, float | None, str | None], None]
NOBODY_ASKS = ElicitReply("decline")


async def _no_person(asked: Elicited) -> ElicitReply:
    """Outside a run's call (discovery, a listing, a connection of its own) nobody is there
    to answer: the server is told `decline` at once."""
    return NOBODY_ASKS


class PausingClock:
    """A call's deadline (`scope`) that stops while a person answers the server: what was
    left of it goes on once they did (nested questions pause it once)."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.scope = scope
        self.pauses = 0
        self.left = 0.0

    def pause(self) -> None:
        if self.pauses == 0:
            self.left = max(0.0, self.scope.deadline - anyio.current_time())
            self.scope.deadline = math.inf
        self.pauses += 1

    def resume(self) -> None:
        self.pauses -= 1
        if self.pauses == 0:
            self.scope.deadline = anyio.current_time() + self.left

    def around(self, elicitor: Elicitor) -> Elicitor:
        async def asking(asked: Elicited) -> ElicitReply:
            self.pause()
            try:
                return await elicitor(asked)
            finally:
                self.resume()

        return asking


def elicitation_callback(elicitor: Elicitor | None) -> Any:
    """The SDK's `elicitation_callback` over `elicitor` (None: decline). Every session
    Planboard opens has one, so servers know it can ask (the reference server lists its
    elicitation tools only to clients that can)."""
    ask = elicitor or _no_person

    async def callback(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if isinstance(params, ElicitRequestURLParams):
            asked = Elicited(
                mode="url",
                message=params.message,
                schema={},
                url=params.url,
                elicitation_id=params.elicitation_id or "",
            )
        elif isinstance(params, ElicitRequestFormParams):
            asked = Elicited(
                mode="form", message=params.message, schema=dict(params.requested_schema or {})
            )
        else:  # pragma: no cover - the SDK's union has two members
            return ErrorData(code=INVALID_PARAMS, message="Unknown elicitation mode.")
        reply = await ask(asked)
        if reply.error:
            return ErrorData(code=INVALID_PARAMS, message=reply.error)
        content = reply.content if reply.action == "accept" and asked.mode == "form" else None
        return ElicitResult.model_validate({"action": reply.action, "content": content})

    return callback


output_limit = mcp_limits.output_limit


# --- the public calls -------------------------------------------------------------------------


def discover_tools(toolset: Toolset) -> list[dict[str, Any]]:
    """The tools the server lists: `{name, description, input_schema, read_only}` each, or
    `{name, too_large: True}` for a tool over `PLANBOARD_TOOL_SCHEMA_MAX_BYTES` (its text is
    not kept). Listing stops once the server is over a toolset limit (one tool more than
    `PLANBOARD_TOOLSET_MAX_TOOLS`, or more than `PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES`): the
    refresh refuses it then, and nothing more needs to be read."""

    oauth = _oauth_for(toolset)

    async def listing_all(session: ClientSession) -> Discovered:
        found = Discovered(await _listing(session))
        found.catalog = await _catalog(session)
        return found

    try:
        found = _run(lambda: _connected_signed_in(toolset, listing_all, oauth=oauth))
    except Failure as failure:
        raise PlanError(failure.message, code="toolset_unreachable") from None
    finally:
        if oauth is not None:
            oauth.store_changed()
    for item in found:
        item.pop("weight", None)
    return found


class Discovered(list[dict[str, Any]]):
    """What `discover_tools` found: the tools (the list itself), and the server's resources,
    resource templates and prompts (`catalog`, as `_catalog` reads them; a discoverer that
    returns a plain list lists none). One connection lists them all."""

    catalog: dict[str, list[dict[str, Any]]]


async def _catalog(session: ClientSession) -> dict[str, list[dict[str, Any]]]:
    """The server's resources, resource templates and prompts, as far as it offers them
    (its capabilities say so) and at most one item past `tool_listing.max_catalog_items()`
    each (the service keeps the first ones). A server that fails to list one of them lists
    none of it: its tools still count."""
    capabilities = session.server_capabilities
    found: dict[str, list[dict[str, Any]]] = {"resources": [], "templates": [], "prompts": []}
    if capabilities is None:
        return found
    keep = max_catalog_items() + 1
    if capabilities.resources is not None:
        found["resources"] = await _pages(session.list_resources, "resources", keep, _resource)
        found["templates"] = await _pages(
            session.list_resource_templates, "resource_templates", keep, _template
        )
    if capabilities.prompts is not None:
        found["prompts"] = await _pages(session.list_prompts, "prompts", keep, _prompt)
    return found


async def _pages(
    lister: Callable[..., Awaitable[Any]],
    field_name: str,
    keep: int,
    shape: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        for _ in range(MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await lister(params=params)
            for item in getattr(page, field_name):
                found.append(shape(item))
                if len(found) >= keep:
                    return found
            cursor = page.next_cursor
            if not cursor:
                break
    except MCPError:
        logger.info("listing %s failed", field_name, exc_info=True)
        return []
    return found


def _resource(item: Any) -> dict[str, Any]:
    return {
        "uri": str(item.uri),
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "mime_type": item.mime_type or "",
        "size": item.size,
    }


def _template(item: Any) -> dict[str, Any]:
    return {
        "uri_template": str(item.uri_template),
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "mime_type": item.mime_type or "",
    }


def _prompt(item: Any) -> dict[str, Any]:
    return {
        "name": item.name,
        "title": item.title or "",
        "description": item.description or "",
        "arguments": [
            {
                "name": argument.name,
                "description": argument.description or "",
                "required": bool(argument.required),
            }
            for argument in item.arguments or []
        ],
    }


async def _listing(session: ClientSession) -> list[dict[str, Any]]:
    """The server's tools as `discover_tools` describes them (with their `weight`)."""
    found: list[dict[str, Any]] = []
    weight = 0
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            found.append(_listed(tool))
            weight += found[-1].get("weight", 0)
            if len(found) > max_tools() or weight > toolset_schema_max_bytes():
                return found
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def listing_digest(session: ClientSession) -> str:
    """A hash of what an open session's server lists now, tools, resources and prompts (to
    tell whether it changed)."""
    found = {"tools": await _listing(session), **(await _catalog(session))}
    return hashlib.sha256(json.dumps(found, sort_keys=True, default=str).encode()).hexdigest()


def _listed(tool: Any) -> dict[str, Any]:
    """One tool of a listing (and its `weight` in bytes, counted towards the toolset's)."""
    description = tool.description or ""
    schema = dict(tool.input_schema or {})
    weight = listing_bytes(description, schema)
    if weight > tool_schema_max_bytes():
        return {"name": tool.name, "too_large": True}
    annotations = tool.annotations
    execution = tool.execution
    return {
        "name": tool.name,
        "description": description,
        "input_schema": schema,
        "read_only": bool(annotations and annotations.read_only_hint),
        "task_support": (execution.task_support if execution else None) or "forbidden",
        "weight": weight,
    }


def call_tool(toolset: Toolset, tool: str, arguments: dict[str, Any]) -> ToolOutput:
    """Call one tool; the result (or what went wrong) as text for the model."""
    return _run(lambda: acall_tool(toolset, tool, arguments))


async def acall_tool(
    toolset: Toolset, tool: str, arguments: dict[str, Any], *, elicit: Elicitor | None = None
) -> ToolOutput:
    """`call_tool` awaited on the caller's event loop (the run host's): the wait for the
    server costs no thread. `elicit` answers what the server asks a person meanwhile (the
    call's clock stopped while they think); without it such a question is declined."""
    started = time.monotonic()

    async def calling(session: ClientSession) -> ToolOutput:
        # The connection's own deadline (which pauses for a person) bounds the call.
        unbounded = math.inf if elicit is not None else None
        return await call_on(session, toolset, tool, arguments, read_timeout=unbounded)

    oauth = _oauth_for(toolset)
    try:
        output = await _connected_signed_in(
            toolset, calling, tool=tool, oauth=oauth, elicitor=elicit
        )
    except Failure as failure:
        output = ToolOutput(f"Error: {failure.message}", ok=False)
    except Exception as exc:  # a bug of ours or of the SDK: still an answer for the model
        output = unexpected(toolset, tool, exc)
    output = finished(output, started)
    return oauth.outcome(output) if oauth is not None else output


async def call_on(
    session: ClientSession,
    toolset: Toolset,
    tool: str,
    arguments: dict[str, Any],
    *,
    read_timeout: float | None = None,
    progress: Progress | None = None,
) -> ToolOutput:
    """One tools/call on an initialized session, its result as the model gets it (cut,
    secrets removed). `read_timeout`: the SDK's own limit on the wait for the answer
    (`PLANBOARD_TOOL_TIMEOUT` unless given; a live session gives `math.inf` and keeps the
    limit itself, with its clock stopped while a person answers the server's question).
    `progress`: told the server's progress notifications (the call then asks for them)."""
    limit = timeout_seconds() if read_timeout is None else read_timeout
    reported = None
    if progress is not None:
        tell = progress

        async def reported(progress: float, total: float | None, message: str | None) -> None:
            tell(progress, total, message)

    result = await session.call_tool(
        tool, arguments, read_timeout_seconds=limit, progress_callback=reported
    )
    rendered = mcp_limits.render_result(result, keep=output_limit() + mcp_limits.REDACTION_ROOM)
    text = _redact(rendered.text, toolset)
    if result.is_error:
        reason = text.strip() or "no reason given"
        return ToolOutput(
            f"Error: toolset '{toolset.name}': the tool '{tool}' failed: {reason}", ok=False
        )
    return ToolOutput(mcp_limits.cut(text, total=rendered.total, exact=rendered.exact), True)


# --- resources and prompts (issue 24) ---------------------------------------------------------


async def read_on(session: ClientSession, toolset: Toolset, uri: str) -> ToolOutput:
    """One resources/read on an initialized session: the contents as the model may get them
    (cut to `PLANBOARD_TOOL_OUTPUT_LIMIT`, binary contents described, secrets removed)."""
    result = await session.read_resource(uri)
    rendered = mcp_limits.render_contents(result, keep=output_limit() + mcp_limits.REDACTION_ROOM)
    text = _redact(rendered.text, toolset)
    return ToolOutput(mcp_limits.cut(text, total=rendered.total, exact=rendered.exact), True)


def read_resource(toolset: Toolset, uri: str) -> ToolOutput:
    """Read one resource on a connection of its own (never raises: `Error: …` text)."""
    return _run(lambda: aread_resource(toolset, uri))


async def aread_resource(toolset: Toolset, uri: str) -> ToolOutput:
    """`read_resource` awaited on the caller's event loop."""
    started = time.monotonic()
    oauth = _oauth_for(toolset)
    try:
        output = await _connected_signed_in(
            toolset, lambda session: read_on(session, toolset, uri), tool=READING, oauth=oauth
        )
    except Failure as failure:
        output = ToolOutput(f"Error: {failure.message}", ok=False)
    except Exception as exc:
        output = unexpected(toolset, READING, exc)
    output = finished(output, started)
    return oauth.outcome(output) if oauth is not None else output


# What failures of resources/read call the operation ("calling 'resources/read' failed").
READING = "resources/read"


def get_prompt(toolset: Toolset, name: str, arguments: dict[str, str]) -> str:
    """A prompt's text (`settings.PLANBOARD_TOOL_PROMPT_GETTER`): prompts/get on a connection
    of its own, bounded by `PLANBOARD_TOOL_TIMEOUT`; its messages' text joined, anything else
    described, cut to `PLANBOARD_TOOL_OUTPUT_LIMIT`, secrets removed. Raises `PlanError`
    saying why the server could not give it."""

    async def getting(session: ClientSession) -> str:
        result = await session.get_prompt(name, arguments)
        pieces: list[str] = []
        for message in result.messages:
            content = message.content
            if isinstance(content, TextContent):
                pieces.append(content.text)
            elif isinstance(content, EmbeddedResource):
                inner = content.resource
                if isinstance(inner, TextResourceContents):
                    pieces.append(inner.text)
                else:
                    uri = str(inner.uri)[: mcp_limits.URI_SHOWN]
                    pieces.append(f"[resource {uri} ({inner.mime_type or 'binary'})]")
            elif isinstance(content, ResourceLink):
                pieces.append(f"[resource: {str(content.uri)[: mcp_limits.URI_SHOWN]}]")
            else:
                pieces.append(f"[{content.type} omitted]")
            if sum(len(p) for p in pieces) > output_limit() + mcp_limits.REDACTION_ROOM:
                break
        return mcp_limits.cut(_redact("\n\n".join(pieces), toolset))

    oauth = _oauth_for(toolset)
    try:
        return _run(lambda: _connected_signed_in(toolset, getting, tool="prompts/get", oauth=oauth))
    except Failure as failure:
        raise PlanError(failure.message, code="toolset_unreachable") from None
    finally:
        if oauth is not None:
            oauth.store_changed()


def unexpected(toolset: Toolset, tool: str, exc: BaseException) -> ToolOutput:
    logger.exception("calling %s of toolset %s failed", tool, toolset.name, exc_info=exc)
    return ToolOutput(
        f"Error: toolset '{toolset.name}': calling '{tool}' failed unexpectedly "
        f"({type(exc).__name__}).",
        ok=False,
    )


def finished(output: ToolOutput, started: float) -> ToolOutput:
    """`output` with the call's duration; an error quoting the server cut (a result was cut
    when it was rendered)."""
    elapsed = int((time.monotonic() - started) * 1000)
    text = output.text if output.ok else mcp_limits.cut(output.text)
    return ToolOutput(text, ok=output.ok, duration_ms=elapsed)


# --- connections ------------------------------------------------------------------------------


class Failure(Exception):
    """Why a toolset could not be used, in words for people and models."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _connected(
    toolset: Toolset,
    action: Callable[[ClientSession], Awaitable[T]],
    *,
    tool: str = "",
    oauth: _OAuthUse | None = None,
    elicitor: Elicitor | None = None,
) -> T:
    """Connect, initialize, run `action`, close; every failure becomes a `Failure`. The
    `PLANBOARD_TOOL_TIMEOUT` covers it all, except the time a person takes to answer what
    the server asks (`elicitor`)."""
    limit = timeout_seconds()
    errlog: TextIO = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    reading = mcp_limits.ReadLimit()  # how large a message the server may send
    scope = anyio.CancelScope(deadline=anyio.current_time() + limit)
    asking = PausingClock(scope).around(elicitor) if elicitor is not None else None
    try:
        with scope:
            async with opened(
                toolset, errlog=errlog, reading=reading, oauth=oauth, elicitor=asking
            ) as session:
                return await action(session)
        raise TimeoutError()  # only reached when the deadline cancelled the scope
    except Failure:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: not ours to eat
            raise
        if oauth is not None and oauth.provider.reconnect and not reading.exceeded:
            raise Failure(oauth.reconnect_message()) from None
        raise failure_of(exc, toolset, tool=tool, errlog=errlog, reading=reading) from None
    finally:
        errlog.close()


def failure_of(
    exc: BaseException,
    toolset: Toolset,
    *,
    tool: str,
    errlog: IO[str],
    reading: mcp_limits.ReadLimit,
) -> Failure:
    """What went wrong with a connection, for people and models."""
    if reading.exceeded:  # whatever the SDK made of it, this is what happened
        return Failure(_redact(reading.describe(toolset.name), toolset))
    return Failure(_describe(exc, toolset, tool=tool, stderr=_tail(errlog)))


@asynccontextmanager
async def opened(
    toolset: Toolset,
    *,
    errlog: TextIO,
    reading: mcp_limits.ReadLimit,
    message_handler: MessageHandlerFnT | None = None,
    on_end: Callable[[], None] | None = None,
    oauth: _OAuthUse | None = None,
    elicitor: Elicitor | None = None,
    roots: Sequence[str] = (),
) -> AsyncIterator[ClientSession]:
    """An initialized session with the toolset's server: started (stdio) or reached (HTTP),
    reading through `reading`, the server's stderr in `errlog`. `message_handler` gets what
    the server sends unasked (notifications); `on_end` is called once a stdio server's output
    ends (it stopped); `roots` (`file://` URIs) answer the server's roots/list (the roots
    capability is always declared: a connection with no conversation answers none);
    `elicitor` answers the server's questions to a person (None: they are declined).
    Closed, and a stdio server stopped, on exit."""
    limit = timeout_seconds()
    list_roots = _roots_answer(roots)
    eliciting = elicitation_callback(elicitor)
    if toolset.kind == Toolset.Kind.STDIO:
        params = StdioServerParameters(
            command=toolset.command,
            args=[str(a) for a in toolset.args or []],
            env={str(k): str(v) for k, v in (toolset.env or {}).items()} or None,
        )
        async with (
            _bounded_stdio_client(params, errlog=errlog, limit=reading, on_end=on_end) as (
                read,
                write,
            ),
            ClientSession(
                read,
                write,
                read_timeout_seconds=limit,
                message_handler=message_handler,
                elicitation_callback=eliciting,
                list_roots_callback=list_roots,
            ) as session,
        ):
            await session.initialize()
            yield session
        return
    headers = {str(k): str(v) for k, v in (toolset.headers or {}).items()}
    async with (
        checked_client(
            headers=headers,
            timeout=limit,
            # The call's stream is silent while a person answers the server's question.
            read_timeout=limit if elicitor is None else max(limit, elicitation_seconds()) + limit,
            auth=oauth.provider if oauth is not None else None,
            event_hooks={
                "request": [reading.on_request],
                "response": [reading.on_response],
            },
        ) as http,
        streamable_http_client(
            toolset.url, http_client=http, max_sse_event_size=reading.max_bytes
        ) as (read, write),
        ClientSession(
            read,
            write,
            read_timeout_seconds=limit,
            message_handler=message_handler,
            elicitation_callback=eliciting,
            list_roots_callback=list_roots,
        ) as session,
    ):
        await session.initialize()
        yield session


def _roots_answer(roots: Sequence[str]) -> ListRootsFnT:
    """The answer to a server's roots/list: the conversation's workspace folder when it is
    on this machine (`planboard.workspace.local_root_uri`), else no roots."""
    answer = ListRootsResult(
        roots=[Root.model_validate({"uri": uri, "name": "workspace"}) for uri in roots]
    )

    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return answer

    return list_roots


async def _connected_signed_in(
    toolset: Toolset,
    action: Callable[[ClientSession], Awaitable[T]],
    *,
    tool: str = "",
    oauth: _OAuthUse | None = None,
    elicitor: Elicitor | None = None,
) -> T:
    """`_connected`, and once more with a refreshed token when the server refused the one we
    held (it never ran anything for an unauthenticated request)."""
    try:
        return await _connected(toolset, action, tool=tool, oauth=oauth, elicitor=elicitor)
    except Failure:
        if oauth is None or not oauth.refresh_instead():
            raise
    return await _connected(toolset, action, tool=tool, oauth=oauth, elicitor=elicitor)


@asynccontextmanager
async def _bounded_stdio_client(
    server: StdioServerParameters,
    *,
    errlog: TextIO,
    limit: mcp_limits.ReadLimit,
    on_end: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's `stdio_client`, started and stopped by the SDK's own helpers, but reading
    the server's stdout through `limit`: the SDK keeps a line however long it grows, so one
    huge message could take the worker's memory. Past the limit the read stream closes (the
    session's waiting request fails; `_connected` says why) and the rest of stdout is drained
    unread until the server is stopped."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # The process runs: no awaits before the task group, or a cancellation could leak it.
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](
        0
    )
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout, "the server is started with pipes"
        lines = mcp_limits.LineSplitter(limit)
        try:
            try:
                async with read_stream_writer:
                    async for chunk in process.stdout:
                        for line in lines.feed(chunk):
                            text = line.decode(server.encoding, server.encoding_error_handler)
                            await read_stream_writer.send(_parse_line(text))
            except mcp_limits.MessageTooLarge:
                pass  # `limit` records it; the closed stream ends the session's wait at once
            finally:
                if on_end is not None:
                    on_end()  # a live session is given up, not used again
                # After the stream is closed (the SDK drains first, which only ends when
                # the server stops: with a session still waiting, that is at the timeout).
                await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the session is gone, or our own shutdown closed stdout under the read

    async def stdin_writer() -> None:
        assert process.stdin, "the server is started with pipes"
        try:
            async with write_stream_reader:
                async for message in write_stream_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    payload = (data + "\n").encode(server.encoding, server.encoding_error_handler)
                    await process.stdin.send(payload)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()  # the session sees the end, not a hang
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(0.5):
            await writer_done.wait()
        await _stop_server_process(process)
        await _aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # Every wait inside is bounded; shielded so a cancelled caller cannot leak the server.
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups of the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def is_refusal(exc: BaseException) -> bool:
    """Whether a call's error is the server's answer (unknown tool, bad arguments) on a
    connection that still works, rather than a timeout or the connection gone."""
    error = leaf(exc)
    if not isinstance(error, MCPError) or is_session_gone(exc):
        return False
    message = error.message.lower()
    return "closed" not in message and "timed out" not in message


def is_session_gone(exc: BaseException) -> bool:
    """Whether an HTTP server answered that it no longer knows the session (404 for its id,
    e.g. after a restart): the request was refused unread, and may be sent on a new one."""
    error = leaf(exc)
    return isinstance(error, MCPError) and "session terminated" in error.message.lower()


def is_tools_changed(message: Any) -> bool:
    """Whether what a server sent unasked says its tools, resources or prompts changed (a
    refresh lists all three)."""
    return isinstance(
        message,
        ToolListChangedNotification
        | ResourceListChangedNotification
        | PromptListChangedNotification,
    )


def _describe(exc: BaseException, toolset: Toolset, *, tool: str, stderr: str) -> str:
    """`toolset '<name>': <what went wrong>`, secrets removed."""
    error = leaf(exc)
    who = f"toolset '{toolset.name}': "
    what = f"the tool '{tool}'" if tool else "the server"
    if isinstance(error, TimeoutError) or (
        isinstance(error, MCPError) and "timed out" in error.message
    ):
        message = (
            f"{what} did not answer within {timeout_seconds():g} seconds; the call was "
            "abandoned (it may or may not have taken effect)."
        )
    elif isinstance(error, outbound.AddressRefused):
        message = f"its server is not reachable from here: {error.message}"
    elif toolset.kind == Toolset.Kind.STDIO and isinstance(error, OSError):
        reason = error.strerror or str(error)
        message = f"could not start its server ('{toolset.command}'): {reason}."
    elif isinstance(error, httpx2.HTTPError):
        message = f"the server could not be reached ({type(error).__name__}: {error})."
    elif isinstance(error, MCPError) and "closed" in error.message.lower():
        message = "the server stopped unexpectedly (the connection closed)."
        if stderr:
            message += f" Its last words: {stderr}"
    elif isinstance(error, MCPError):
        message = f"the server refused: {error.message.rstrip('.')}."
    else:
        message = f"{what} failed ({type(error).__name__}: {error})."
    return _redact(who + message, toolset)


def _tail(errlog: IO[str]) -> str:
    # Only the end of the file is read: a server may have written gigabytes to stderr.
    text = mcp_limits.file_tail(errlog, STDERR_TAIL * 4)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[-3:])[-STDERR_TAIL:]


def _redact(text: str, toolset: Toolset) -> str:
    """Secret values never reach the model or the transcript, even if a server echoes them
    (encoded, too: agents/redaction.py), nor do credentials of any URL the text names."""
    return redact_urls_in_text(redact_for(text, toolset))


# --- OAuth 2.1 for remote servers (issue 24) -------------------------------------------------
#
# Everything protocol-shaped is the SDK's `OAuthClientProvider`: protected-resource and
# authorization-server discovery, dynamic client registration, PKCE, the token requests and the
# silent refresh. Planboard splits its interactive step over two web requests: "Connect"
# (`oauth_start`) lets the SDK discover and register, then stops where the SDK would open a
# browser, handing back the authorization URL with the PKCE verifier and state for the web
# layer to keep server-side; the callback (`oauth_finish`) has the SDK exchange the code. At
# call time the provider sends the stored access token, refreshes it when it has expired or
# the server refuses it, and — where the SDK would start a new interactive sign-in because
# the refresh was refused — Planboard ends the call with a "reconnect" message instead.


class _SignInNeeded(OAuthFlowError):
    """Where the SDK would open a browser: Planboard stops the flow on purpose."""


class _QuietStops(logging.Filter):
    """The SDK logs every stop of its flow as an error; ours are not."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _SignInNeeded))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietStops())


class _Provider(OAuthClientProvider):
    """The SDK's provider, loading what Planboard stored, never opening a browser."""

    def __init__(
        self, server_url: str, *, client: dict[str, Any], tokens: dict[str, Any], connecting: bool
    ) -> None:
        redirect_uri = str(client.get("redirect_uri") or "")
        metadata = OAuthClientMetadata.model_validate(
            {
                "client_name": "Planboard",
                "redirect_uris": [redirect_uri] if redirect_uri else None,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "scope": client.get("scope") or None,
            }
        )
        self.store = _TokenStore(client=client, tokens=tokens)
        super().__init__(server_url, metadata, self.store)
        self.stored = client
        self.connecting = connecting
        self.reconnect = False  # the provider refused our tokens: a person must sign in
        self.started: dict[str, str] | None = None  # `oauth_start`: where to send the person

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        context.token_expiry_time = self.store.expires_at
        if self.stored.get("oauth_metadata"):
            context.oauth_metadata = OAuthMetadata.model_validate(self.stored["oauth_metadata"])
        if self.stored.get("protected_resource"):
            context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                self.stored["protected_resource"]
            )
        context.auth_server_url = self.stored.get("auth_server_url") or None

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        """Where the SDK would send a person to sign in: `oauth_start` keeps the URL and stops
        (the person's browser goes there); a call stops with a reconnect message."""
        context = self.context
        if not self.connecting:
            self.reconnect = True
            raise _SignInNeeded("the server asks for a new sign-in")
        if context.client_info is None or not context.client_metadata.redirect_uris:
            raise OAuthFlowError("no client registration to sign in with")
        if context.oauth_metadata and context.oauth_metadata.authorization_endpoint:
            endpoint = str(context.oauth_metadata.authorization_endpoint)
        else:  # a server without metadata: the SDK's fallback
            endpoint = context.get_authorization_base_url(context.server_url) + "/authorize"
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": str(context.client_metadata.redirect_uris[0]),
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if context.should_include_resource_param(context.protocol_version):
            params["resource"] = context.get_resource_url()
        if context.client_metadata.scope:
            params["scope"] = context.client_metadata.scope
            if "offline_access" in context.client_metadata.scope.split():
                params["prompt"] = "consent"
        self.started = {
            "authorization_url": f"{endpoint}?{urlencode(params)}",
            "state": state,
            "code_verifier": pkce.code_verifier,
        }
        raise _SignInNeeded("the person signs in at the provider")

    def client_state(self) -> dict[str, Any]:
        """What to keep of the registration and discovery (`Toolset.oauth_client`)."""
        context = self.context
        state: dict[str, Any] = {
            "redirect_uri": self.stored.get("redirect_uri", ""),
            "scope": context.client_metadata.scope or "",
            "auth_server_url": context.auth_server_url or "",
        }
        for key, value in (
            ("client_info", context.client_info),
            ("oauth_metadata", context.oauth_metadata),
            ("protected_resource", context.protected_resource_metadata),
        ):
            if value is not None:
                state[key] = value.model_dump(mode="json", exclude_none=True)
        return state


class _TokenStore:
    """The SDK's `TokenStorage`, over what Planboard stored (encrypted in the database);
    what changes is read back by the caller and stored there."""

    def __init__(self, *, client: dict[str, Any], tokens: dict[str, Any]) -> None:
        info = client.get("client_info")
        self.client_info = OAuthClientInformationFull.model_validate(info) if info else None
        token = tokens.get("token")
        self.tokens = OAuthToken.model_validate(token) if token else None
        expires_at = tokens.get("expires_at")
        self.expires_at = float(expires_at) if expires_at is not None else None
        self.tokens_changed = False

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.expires_at = calculate_token_expiry(tokens.expires_in)
        self.tokens_changed = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info

    def as_stored(self) -> dict[str, Any]:
        if self.tokens is None:
            return {}
        return {
            "token": self.tokens.model_dump(mode="json", exclude_none=True),
            "expires_at": self.expires_at,
        }


@dataclass
class _OAuthUse:
    """One use of an OAuth toolset: its provider, whose tokens it carries, and the stored
    tokens it started from (what it changed replaces only those)."""

    toolset: Toolset
    provider: _Provider
    started: dict[str, Any]
    retried: bool = False

    def changed_tokens(self) -> dict[str, Any] | None:
        """Tokens to store after the use: refreshed ones, `{}` when the provider refused
        them (the person connects again), None when nothing changed."""
        if self.provider.reconnect:
            return {}
        if self.provider.store.tokens_changed:
            return self.provider.store.as_stored()
        return None

    def outcome(self, output: ToolOutput) -> ToolOutput:
        """`output` with the tokens the use changed, for its caller to store."""
        tokens = self.changed_tokens()
        if tokens is None:
            return output
        return replace(output, oauth_tokens=tokens, oauth_replaces=self.started)

    def store_changed(self) -> None:
        """Store what the use changed (outside a run: discovery, prompts)."""
        tokens = self.changed_tokens()
        if tokens is not None:
            services.toolset_oauth_tokens_store(
                toolset_id=self.toolset.pk,
                user_id=self.toolset.oauth_user_id,
                tokens=tokens,
                replacing=self.started,
            )

    def reconnect_message(self) -> str:
        return reconnect_message(self.toolset)

    def refresh_instead(self) -> bool:
        """The server refused an access token we held for valid (revoked, or expired early):
        the SDK would ask for a new sign-in at once; try the refresh token first, once."""
        store = self.provider.store
        if not self.provider.reconnect or self.retried or store.tokens is None:
            return False
        if not store.tokens.refresh_token:
            return False
        self.retried = True
        tokens = {**store.as_stored(), "expires_at": 1.0}  # long expired: the SDK refreshes
        self.provider = _Provider(
            self.toolset.url, client=self.provider.stored, tokens=tokens, connecting=False
        )
        return True


def signs_in(toolset: Toolset) -> bool:
    """Whether calls to `toolset` carry OAuth tokens (a remote server with `auth: oauth`)."""
    return toolset.kind == Toolset.Kind.HTTP and toolset.auth == Toolset.Auth.OAUTH


def _oauth_for(toolset: Toolset) -> _OAuthUse | None:
    """The OAuth side of a call to `toolset` (as called: `selectors.toolset_as_called` put the
    tokens of the session's owner, or the shared ones, on it); None for other toolsets."""
    if not signs_in(toolset):
        return None
    started = copy.deepcopy(toolset.oauth_tokens or {})
    provider = _Provider(
        toolset.url,
        client=dict(toolset.oauth_client or {}),
        tokens=dict(started),
        connecting=False,
    )
    return _OAuthUse(toolset=toolset, provider=provider, started=started)


def reconnect_message(toolset: Toolset) -> str:
    where = f"{settings.PLANBOARD_PUBLIC_URL}/toolsets/{toolset.pk}/connect/"
    whose = (
        "The session owner's"
        if toolset.access == Toolset.Access.PER_PERSON
        else "The toolset's shared"
    )
    return (
        f"toolset '{toolset.name}': {whose} sign-in at its provider has expired or was "
        f"revoked. Reconnect {toolset.name} at {where} and try again."
    )


def oauth_start(toolset: Toolset, *, redirect_uri: str) -> dict[str, Any]:
    """Begin connecting an OAuth toolset (`settings.PLANBOARD_TOOL_OAUTH_START`): the SDK
    discovers the server's authorization server and registers Planboard there when it has
    no registration yet. Returns `authorization_url` (where the person signs in), `state`
    and `code_verifier` (kept server-side until the callback) and `client` (to store as the
    toolset's `oauth_client`). Raises `PlanError` when the server cannot be reached or does
    not ask for OAuth."""
    client = dict(toolset.oauth_client or {})
    if client.get("redirect_uri") != redirect_uri:
        client = {"redirect_uri": redirect_uri}  # registered for another address: anew
    provider = _Provider(toolset.url, client=client, tokens={}, connecting=True)
    limit = timeout_seconds()

    async def probe() -> None:
        async with checked_client(headers={}, timeout=limit, auth=provider) as http:
            await http.post(
                toolset.url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "planboard", "version": "1"},
                    },
                },
                headers={"Accept": "application/json, text/event-stream"},
            )

    try:
        _run(probe)
    except Exception as exc:
        if provider.started is None:
            reason = _redact(redact_urls_in_text(str(leaf(exc)) or type(exc).__name__), toolset)
            raise PlanError(
                f"Toolset {toolset.name!r}: could not start signing in at its server: {reason}",
                code="oauth_failed",
            ) from None
    if provider.started is None:
        raise PlanError(
            f"Toolset {toolset.name!r}: its server did not ask for a sign-in (no 401), so there "
            "is nothing to connect.",
            code="oauth_failed",
        )
    return {**provider.started, "client": provider.client_state()}


def oauth_finish(toolset: Toolset, *, code: str, code_verifier: str) -> dict[str, Any]:
    """Exchange the authorization code the provider sent back (`settings.
    PLANBOARD_TOOL_OAUTH_FINISH`) for tokens, through the SDK; returns them as stored."""
    provider = _Provider(
        toolset.url, client=dict(toolset.oauth_client or {}), tokens={}, connecting=True
    )
    limit = timeout_seconds()

    async def exchange() -> None:
        await provider._initialize()
        async with checked_client(headers={}, timeout=limit) as http:
            request = await provider._exchange_token_authorization_code(code, code_verifier)
            response = await http.send(request)
            await provider._handle_token_response(response)

    try:
        _run(exchange)
    except Exception as exc:
        reason = _redact(redact_urls_in_text(str(leaf(exc)) or type(exc).__name__), toolset)
        raise PlanError(
            f"Toolset {toolset.name!r}: the provider did not give tokens for the sign-in: {reason}",
            code="oauth_failed",
        ) from None
    return provider.store.as_stored()


# --- running async code from the synchronous loop ---------------------------------------------


def _run(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside an event loop (async code): run ours in a thread of its own.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-call") as pool:
        return pool.submit(asyncio.run, main()).result()
