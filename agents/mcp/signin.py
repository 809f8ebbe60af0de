"""A live session's requests signed in (`auth: oauth` toolsets kept open for a conversation:
`agents.mcp.live`).

The streamable HTTP transport sends every request through the session's httpx client, whose
`auth` adds the Authorization header per request; `SessionSignIn` is that auth. Each call
hands it the tokens it was given (`OAuthUse`: the token owner's as stored when the call was
claimed), so a token refreshed by an earlier call, or by any other use, is sent by the next
call on the same session without reconnecting. Whose tokens those are never changes for a
session: the pool keys sessions by chat session, toolset and token owner
(`agents.mcp.live.identity_of`).

While a call is served its provider (`_SessionProvider`) refreshes an expired token with the
SDK's refresh request, and once more when the server refuses the token (revoked or expired
early); it never starts a sign-in. A refused refresh marks the use `reconnect` and hands the
server's 401 back to the SDK, which fails the request: the pool answers with the reconnect
message and the person connects again. Between calls the session's own requests (its change
stream, its end) carry the last call's access token as it is: a refresh is stored only with
a call's result, so none happens there.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator
from dataclasses import replace

import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.auth import OAuthToken
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from agents.mcp.oauth import OAuthUse, _Provider, signs_in
from agents.mcp.outcome import ToolOutput
from planboard.models import Toolset

Flow = AsyncGenerator[httpx2.Request, httpx2.Response]


def _refused(response: httpx2.Response) -> bool:
    """The server refused the request's token: missing, expired, revoked (401), or short of
    the scope the request needs (403 `insufficient_scope`: only a new sign-in widens it)."""
    if response.status_code == 401:
        return True
    return (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


class _SessionProvider(_Provider):
    """The SDK's provider for one call on a live session: sends the call's access token,
    refreshes it at most once, never signs in."""

    def _sign(self, request: httpx2.Request) -> None:
        if self.context.is_token_valid():
            self._add_auth_header(request)
        else:
            request.headers.pop("Authorization", None)

    async def _auth_flow(self, request: httpx2.Request) -> Flow:
        context = self.context
        async with context.lock:
            if not self._initialized:
                await self._initialize()
            context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            refreshed = False
            if not context.is_token_valid() and context.can_refresh_token():
                refreshed = True
                await self._handle_refresh_response((yield await self._refresh_token()))
            self._sign(request)
            response = yield request
            if not _refused(response):
                return
            if response.status_code == 401 and not refreshed and context.can_refresh_token():
                await self._handle_refresh_response((yield await self._refresh_token()))
                # Refused unread: sent again, with the new token or (refresh refused) none,
                # so the answer the SDK reads is the server's own.
                self._sign(request)
                response = yield request
                if not _refused(response):
                    return
            self.reconnect = True


def session_oauth_for(toolset: Toolset) -> OAuthUse | None:
    """`oauth.oauth_for` for a call on a live session (its provider a `_SessionProvider`);
    None for a toolset that does not sign in."""
    if not signs_in(toolset):
        return None
    started = copy.deepcopy(toolset.oauth_tokens or {})
    provider = _SessionProvider(
        toolset.url, client=dict(toolset.oauth_client or {}), tokens=dict(started), connecting=False
    )
    return OAuthUse(toolset=toolset, provider=provider, started=started)


def signed_outcome(oauth: OAuthUse, output: ToolOutput) -> ToolOutput:
    """What a call on a live session answers: the reconnect message when the server refused
    the sign-in (the session is then closed by the pool), with the tokens the call changed
    for its caller to store (`{}` when refused: the person connects again)."""
    if oauth.provider.reconnect:
        output = replace(output, text=f"Error: {oauth.reconnect_message()}", ok=False)
    return oauth.outcome(output)


class SessionSignIn(httpx2.Auth):
    """The auth of a live session's httpx client: each request signed with the tokens of the
    call being served (`serve`), between calls with the last call's access token."""

    requires_response_body = True  # the provider reads the token endpoint's answers

    def __init__(self, use: OAuthUse) -> None:
        self.use = use
        self.serving = True  # opening the session is part of its first call

    def serve(self, use: OAuthUse | None) -> None:
        """A call starts (`use`: its tokens) or ends (None)."""
        if use is not None:
            self.use = use
        self.serving = use is not None

    def _last_token(self) -> OAuthToken | None:
        provider = self.use.provider
        return provider.context.current_tokens or provider.store.tokens

    async def async_auth_flow(self, request: httpx2.Request) -> Flow:
        if self.serving:
            # The call's provider decides each request; its answers go back to it.
            flow = self.use.provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
        token = self._last_token()
        if token is not None and token.access_token:
            request.headers["Authorization"] = f"Bearer {token.access_token}"
        yield request
