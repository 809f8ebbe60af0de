"""Secrets stored again under the first of PLANBOARD_SECRETS_KEYS (`manage.py rotate_secrets`,
planboard/secret_fields.py) beyond the toolsets' own (`toolset_rotate_secrets`): the webhook
secrets of people's notification settings."""

from __future__ import annotations

from django.db import transaction

from planboard.models import NotificationSettings


def notification_settings_rotate_secrets() -> int:
    """Store every webhook secret again, encrypted under the first key; returns how many. One
    row per transaction: a person changing their settings meanwhile waits for one row only."""
    count = 0
    stored = NotificationSettings.objects.exclude(webhook_secret="").order_by("pk")
    for prefs_id in stored.values_list("pk", flat=True):
        with transaction.atomic():
            prefs = (
                NotificationSettings.objects.select_for_update()
                .only("pk", "webhook_secret")
                .filter(pk=prefs_id)
                .first()
            )
            if prefs is not None and prefs.webhook_secret:
                prefs.save(update_fields=["webhook_secret"])
                count += 1
    return count
