"""Django system checks for deployment settings the code relies on (`manage.py check`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, register
from django.core.checks import Error as CheckError
from django.core.checks import Warning as CheckWarning

PUBSUB_LAYER = "channels_redis.pubsub.RedisPubSubChannelLayer"


@register(Tags.compatibility)
def broadcast_single_redis_host(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The broadcast publisher (planboard/broadcast.py) PUBLISHes to one Redis server. The
    pub/sub layer shards groups over several hosts, so with more than one the web processes
    would listen where nothing is published: every live update lost, only a log line each."""
    layer = getattr(settings, "CHANNEL_LAYERS", {}).get("default", {})
    if layer.get("BACKEND") != PUBSUB_LAYER:
        return []
    hosts = layer.get("CONFIG", {}).get("hosts") or ["redis://localhost:6379"]
    if len(hosts) == 1:
        return []
    return [
        CheckWarning(
            f"CHANNEL_LAYERS lists {len(hosts)} Redis hosts, but live updates are published "
            "to one Redis server only; with several, browsers receive no live updates.",
            hint="List one Redis host (REDIS_URL), or extend planboard/broadcast.py to shard "
            "as channels_redis does.",
            id="planboard.W001",
        )
    ]


@register(Tags.security, deploy=True)
def secrets_key_configured(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Toolset secrets are encrypted under PLANBOARD_SECRETS_KEYS; without it, under a key
    derived from DJANGO_SECRET_KEY, which then can never change without losing them."""
    if getattr(settings, "PLANBOARD_SECRETS_KEYS", ""):
        return []
    return [
        CheckWarning(
            "PLANBOARD_SECRETS_KEYS is not set: toolset secrets are encrypted with a key "
            "derived from DJANGO_SECRET_KEY, so changing that key makes them unreadable.",
            hint="Set PLANBOARD_SECRETS_KEYS to a Fernet key of its own, then run "
            "`manage.py rotate_secrets` (docs/DEPLOYMENT.md).",
            id="planboard.W002",
        )
    ]


SQLITE_RETURNING = (3, 35)  # INSERT/UPDATE ... RETURNING (planboard/sql.py's writes use it)


@register(Tags.compatibility)
def sqlite_has_returning(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The hot path's insert and step counter read what they wrote with RETURNING, which SQLite
    has since 3.35 (March 2021); Django itself would still accept 3.31."""
    if not _uses_sqlite() or sqlite3.sqlite_version_info >= SQLITE_RETURNING:
        return []
    return [
        CheckError(
            f"SQLite {sqlite3.sqlite_version} is too old: Planboard needs SQLite 3.35 or later "
            "(RETURNING).",
            hint="Use a Python built with a newer SQLite, or PostgreSQL (DATABASE_URL).",
            id="planboard.E003",
        )
    ]


def _uses_sqlite() -> bool:
    return any(db.get("ENGINE", "").endswith("sqlite3") for db in settings.DATABASES.values())
