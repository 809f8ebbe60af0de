"""An OAuth-protected MCP server for tests, built with the MCP SDK's server auth support: the
SDK serves the authorization server (metadata, dynamic client registration, authorize, token,
revoke) and the protected-resource metadata, and refuses MCP requests without a valid bearer
token; the provider behind it (`MemoryProvider`) keeps everything in memory and approves every
authorization request at once (the person "signs in" by following the redirect).

A test can make the access tokens expire (`expire_access_tokens`: the client must refresh) or
revoke everything (`revoke_all`: the client must send the person to connect again). The tool
`whoami` answers with the subject the token was issued to and how many access tokens the
server has issued so far.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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

from tests.support.mcp_test_server import add_ask
from tests.support.processes import free_port

TOKEN_SECONDS = 3600


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


@dataclass
class OAuthServer:
    url: str  # the MCP endpoint
    base: str  # the authorization server (the same origin)
    provider: MemoryProvider


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
def oauth_mcp_server() -> Iterator[OAuthServer]:
    """The server on a free loopback port, in a thread."""
    provider = MemoryProvider()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = build_server(provider, base).streamable_http_app()
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
        yield OAuthServer(url=f"{base}/mcp", base=base, provider=provider)
    finally:
        runner.should_exit = True
        thread.join(10)
