"""A toolset's secrets: a person's own credentials for a per-person toolset, OAuth
connections (the registration, a connected account's tokens and their refreshes, docs/TOOLS.md)
and storing every secret again under the newest key (`toolset_rotate_secrets`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from planboard import selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import Toolset, ToolsetCredential
from planboard.services.toolset_fields import clean_toolset

# --- a person's own credentials -------------------------------------------------------------------


def toolset_credential_set(
    *, toolset_id: int, user: User, env: Any = None, headers: Any = None
) -> ToolsetCredential:
    """Set `user`'s own env and headers for a per-person toolset they may use (merged as a
    toolset's are: a name given a value is set, given null removed, left out kept)."""
    cleaned = clean_toolset(
        {k: v for k, v in (("env", env), ("headers", headers)) if v is not None}, updating=True
    )
    with transaction.atomic():
        toolset = (
            selectors.toolsets_usable_by(user).select_for_update().filter(pk=toolset_id).first()
        )
        if toolset is None:
            raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
        if toolset.access != Toolset.Access.PER_PERSON:
            raise PlanError(
                f"Toolset {toolset.name!r} uses one shared credential: staff set it on the "
                "toolset. Only per-person toolsets take your own."
            )
        credential, _ = ToolsetCredential.objects.select_for_update().get_or_create(
            toolset=toolset, user=user
        )
        for key in ("env", "headers"):
            merged = dict(getattr(credential, key) or {})
            for name, secret in cleaned.get(key, {}).items():
                if secret is None:
                    merged.pop(name, None)
                else:
                    merged[name] = secret
            setattr(credential, key, merged)
        credential.save()
    return credential


def toolset_credential_delete(*, toolset_id: int, user: User) -> None:
    """Forget `user`'s own credential for a toolset: their sessions stop offering its tools."""
    deleted, _ = ToolsetCredential.objects.filter(toolset_id=toolset_id, user=user).delete()
    if not deleted:
        raise PlanError("You have no credential of your own for this toolset.", code="not_found")


# --- OAuth: connecting an account (docs/TOOLS.md) ---------------------------------------------


def toolset_oauth_connectable(*, toolset_id: int, user: User) -> Toolset:
    """The OAuth toolset `user` may connect: for a per-person one, one they may use; for a
    shared one (one account for everyone), staff allowed to change toolsets only."""
    toolset = selectors.toolsets_usable_by(user).filter(pk=toolset_id).first()
    if toolset is None:
        raise PlanError(f"Toolset {toolset_id} does not exist.", code="not_found")
    if toolset.kind != Toolset.Kind.HTTP or toolset.auth != Toolset.Auth.OAUTH:
        raise PlanError(f"Toolset {toolset.name!r} does not sign in with OAuth.")
    if not toolset.enabled:
        raise PlanError(f"Toolset {toolset.name!r} is disabled.")
    if toolset.access == Toolset.Access.SHARED and not (
        user.is_staff and user.has_perm("planboard.change_toolset")
    ):
        raise Forbidden(
            f"Toolset {toolset.name!r} signs in with one account for everyone: only staff "
            "allowed to change toolsets may connect it."
        )
    return toolset


def toolset_oauth_register(*, toolset_id: int, client: dict[str, Any]) -> None:
    """Keep Planboard's registration at the toolset's authorization server and what discovery
    found (`Toolset.oauth_client`), when "Connect" starts."""
    with transaction.atomic():
        toolset = Toolset.objects.select_for_update().filter(pk=toolset_id).first()
        if toolset is not None:
            toolset.oauth_client = client
            toolset.save(update_fields=["oauth_client"])


def toolset_oauth_connect(
    *, toolset_id: int, user: User, tokens: dict[str, Any]
) -> ToolsetCredential | Toolset:
    """Store the tokens `user` just connected: the toolset's own for a shared toolset, the
    person's `ToolsetCredential` for a per-person one (checked again: the callback comes
    later than the start)."""
    if not tokens:
        raise PlanError("The provider gave no tokens.")
    with transaction.atomic():
        toolset = toolset_oauth_connectable(toolset_id=toolset_id, user=user)
        if toolset.access == Toolset.Access.SHARED:
            toolset = Toolset.objects.select_for_update().get(pk=toolset.pk)
            toolset.oauth_tokens = tokens
            toolset.save(update_fields=["oauth_tokens", "updated_at"])
            return toolset
        credential, _ = ToolsetCredential.objects.select_for_update().get_or_create(
            toolset=toolset, user=user
        )
        credential.oauth_tokens = tokens
        credential.save(update_fields=["oauth_tokens", "updated_at"])
        return credential


def toolset_oauth_tokens_store(
    *, toolset_id: int, user_id: int | None, tokens: dict[str, Any], replacing: dict[str, Any]
) -> bool:
    """Tokens a call changed: refreshed, or `{}` when the provider refused them (the person
    connects again). `user_id` None: the toolset's shared tokens. They replace only the tokens
    the call started from (`replacing`), compared under the row's lock: providers rotate
    refresh tokens, so of two calls refreshing the same tokens one is refused, and whatever
    was stored meanwhile (the winner's tokens, a new connection, the clearing when the toolset
    moved to another server) is newer and stays. Returns whether the tokens were stored."""
    with transaction.atomic():
        if user_id is None:
            toolset = Toolset.objects.select_for_update().filter(pk=toolset_id).first()
            if toolset is None or (toolset.oauth_tokens or {}) != replacing:
                return False
            toolset.oauth_tokens = tokens
            toolset.save(update_fields=["oauth_tokens"])
            return True
        credential = (
            ToolsetCredential.objects.select_for_update()
            .filter(toolset_id=toolset_id, user_id=user_id)
            .first()
        )
        if credential is None or (credential.oauth_tokens or {}) != replacing:
            return False
        if not tokens and not credential.env and not credential.headers:
            # Refused by the provider and nothing else to keep: the person is no longer
            # connected (their sessions stop being offered the tools until they reconnect).
            credential.delete()
            return True
        credential.oauth_tokens = tokens
        credential.save(update_fields=["oauth_tokens"])
        return True


def toolset_rotate_secrets() -> int:
    """Store every toolset's secrets again, so they are encrypted under the first of
    PLANBOARD_SECRETS_KEYS (planboard/secret_fields.py); returns how many toolsets."""
    count = 0
    for toolset_id in Toolset.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            toolset = (
                Toolset.objects.select_for_update().only(*_SECRET_FIELDS).filter(pk=toolset_id)
            ).first()
            if toolset is not None:
                toolset.save(update_fields=list(_SECRET_FIELDS))
                count += 1
    for credential_id in ToolsetCredential.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            credential = (
                ToolsetCredential.objects.select_for_update().filter(pk=credential_id).first()
            )
            if credential is not None:
                credential.save(update_fields=["env", "headers", "oauth_tokens"])
    return count


_SECRET_FIELDS = ("env", "headers", "url", "oauth_client", "oauth_tokens")
