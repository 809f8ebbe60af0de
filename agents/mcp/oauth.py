"""OAuth 2.1 for remote servers (`auth: oauth` toolsets).

Everything protocol-shaped is the SDK's `OAuthClientProvider`: protected-resource and
authorization-server discovery, dynamic client registration, PKCE, the token requests and the
silent refresh. Planboard splits its interactive step over two web requests: "Connect"
(`oauth_start`) lets the SDK discover and register, then stops where the SDK would open a
browser, handing back the authorization URL with the PKCE verifier and state for the web
layer to keep server-side; the callback (`oauth_finish`) has the SDK exchange the code. At
call time the provider sends the stored access token, refreshes it when it has expired or
the server refuses it, and — where the SDK would start a new interactive sign-in because
the refresh was refused — Planboard ends the call with a "reconnect" message instead.
"""

from __future__ import annotations

import copy
import logging
import secrets
import tempfile
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

import anyio
from django.conf import settings
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, PKCEParameters
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import calculate_token_expiry

from agents import mcp_limits
from agents.mcp.outcome import ToolOutput, leaf, timeout_seconds
from agents.mcp.transport import opened, run_sync
from agents.outbound_http import checked_client
from agents.redaction import redact_server_text
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset


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
class OAuthUse:
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


def oauth_for(toolset: Toolset) -> OAuthUse | None:
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
    return OAuthUse(toolset=toolset, provider=provider, started=started)


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
        # Connecting as a call does (the SDK negotiates the newest revision both sides speak):
        # the server's 401 to the first request names the revision the sign-in is for.
        with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(limit):
            reading = mcp_limits.ReadLimit()
            async with opened(toolset, errlog=errlog, reading=reading, auth=provider):
                pass

    try:
        run_sync(probe)
    except Exception as exc:
        if provider.started is None:
            reason = redact_server_text(str(leaf(exc)) or type(exc).__name__, toolset)
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
        run_sync(exchange)
    except Exception as exc:
        reason = redact_server_text(str(leaf(exc)) or type(exc).__name__, toolset)
        raise PlanError(
            f"Toolset {toolset.name!r}: the provider did not give tokens for the sign-in: {reason}",
            code="oauth_failed",
        ) from None
    return provider.store.as_stored()
