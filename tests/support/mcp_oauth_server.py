"""An OAuth-protected MCP server for tests, built with the MCP SDK's server auth support: the
SDK serves the authorization server (metadata, dynamic client registration, authorize, token,
revoke) and the protected-resource metadata, and refuses MCP requests without a valid bearer
token; the provider behind it (`MemoryProvider`) keeps everything in memory and approves every
authorization request at once (the person "signs in" by following the redirect).

A test can make the access tokens expire (`expire_access_tokens`: the client must refresh) or
revoke everything (`revoke_all`: the client must send the person to connect again). The tool
`whoami` answers with the provider's subject and how many access tokens the server has
issued so far.

`speaks` narrows the revisions it answers (`tests.support.mcp_revisions.revision_filter`:
"handshake" keeps MCP sessions, the default "dual" adopts the stateless 2026 revision), and
`seen` records every MCP request: its JSON-RPC method, its bearer token, the subject the
provider issued that token to, the MCP session id it named and the revision it was sent at.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from tests.support.mcp_revisions import _replaying, _whole_body, revision_filter
from tests.support.mcp_test_server import add_ask
from tests.support.processes import free_port

TOKEN_SECONDS = 3600
# The newest revisions the SDK offers, each era's (for tests, which never import the SDK).
NEWEST_MODERN, NEWEST_HANDSHAKE = LATEST_MODERN_VERSION, LATEST_HANDSHAKE_VERSION


@dataclass
class MemoryProvider:
    """`OAuthAuthorizationServerProvider` in memory, approving every request."""

    subject: str = "alice@provider"
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    issued: int = 0
    refreshed: int = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.subject,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        self.refreshed += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        self.issued += 1
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + TOKEN_SECONDS,
            subject=self.subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, subject=self.subject
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=TOKEN_SECONDS,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    # --- what tests do to it ---

    def expire_access_tokens(self) -> None:
        for token in self.access.values():
            token.expires_at = int(time.time()) - 10

    def revoke_all(self) -> None:
        self.access.clear()
        self.refresh.clear()


@dataclass(frozen=True)
class Seen:
    """One MCP request as the server received it."""

    method: str  # its JSON-RPC method ("" for a response or a GET/DELETE)
    token: str | None  # its bearer token
    subject: str | None  # whom the provider issued that token to (None: not a valid one)
    session: str | None  # the MCP session id it named
    version: str = ""  # the revision it was sent at (its header, or what `initialize` offers)


@dataclass
class OAuthServer:
    url: str  # the MCP endpoint
    base: str  # the authorization server (the same origin)
    provider: MemoryProvider
    seen: list[Seen] = field(default_factory=list)

    def methods(self) -> list[str]:
        return [s.method for s in self.seen if s.method]

    def openings(self) -> int:
        """How many sessions were opened signed in (an `initialize` with a valid token; the
        Connect probe's carries none)."""
        return sum(s.method == "initialize" and s.subject is not None for s in self.seen)

    def calls(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "tools/call"]


def recording(app: Any, server: OAuthServer) -> Any:
    """`app` with every request to the MCP endpoint recorded in `server.seen`."""

    async def recorded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode()
        token = authorization.removeprefix("Bearer ") if authorization else None
        method = ""
        version = headers.get(b"mcp-protocol-version", b"").decode()
        if scope["method"] == "POST":
            body = await _whole_body(receive)
            receive = _replaying(body, receive)
            try:
                message = json.loads(body)
            except ValueError:
                message = {}
            if isinstance(message, dict):
                method = str(message.get("method", ""))
                params = message.get("params")
                if isinstance(params, dict) and not version:
                    version = str(params.get("protocolVersion") or "")
        issued = server.provider.access.get(token or "")
        if issued is not None and issued.expires_at is not None and issued.expires_at < time.time():
            issued = None
        named = headers.get(b"mcp-session-id")
        server.seen.append(
            Seen(
                method=method,
                token=token,
                subject=issued.subject if issued is not None else None,
                session=named.decode() if named else None,
                version=version,
            )
        )
        await app(scope, receive, send)

    return recorded


def build_server(provider: MemoryProvider, base: str) -> MCPServer:
    server = MCPServer(
        "planboard-oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Who the server thinks is calling."""
        return f"signed in as {provider.subject}; tokens issued: {provider.issued}"

    add_ask(server)  # asks a person (elicitation), like the plain test server
    return server


@contextmanager
def oauth_mcp_server(speaks: str = "dual") -> Iterator[OAuthServer]:
    """The server on a free loopback port, in a thread."""
    provider = MemoryProvider()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    found = OAuthServer(url=f"{base}/mcp", base=base, provider=provider)
    app = build_server(provider, base).streamable_http_app()
    if speaks != "dual":
        app = revision_filter(app, speaks, [])
    app = recording(app, found)
    runner = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=runner.run, name="mcp-oauth-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth test MCP server did not start")
        time.sleep(0.02)
    try:
        yield found
    finally:
        runner.should_exit = True
        thread.join(10)
