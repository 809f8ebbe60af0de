"""Secrets stored again under the first of PLANBOARD_SECRETS_KEYS (`manage.py rotate_secrets`,
planboard/secret_fields.py) beyond the toolsets' own (`toolset_rotate_secrets`): the webhook
secrets of people's notification settings, and what waiting MCP questions carry for their
server (`InputRound.carried`, its requestState)."""

from __future__ import annotations

from django.db import transaction

from planboard.models import InputRound, NotificationSettings


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


def input_rounds_rotate_secrets() -> int:
    """Store what every waiting question carries again under the first key; returns how many.
    One row per transaction, under its lock: an answer claiming the round meanwhile (which
    erases `carried`) waits for one row only, and a consumed round is left alone."""
    count = 0
    waiting = InputRound.objects.filter(status=InputRound.Status.WAITING, carried__isnull=False)
    for round_id in waiting.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            found = (
                InputRound.objects.select_for_update()
                .only("pk", "carried", "status")
                .filter(pk=round_id, status=InputRound.Status.WAITING)
                .first()
            )
            if found is not None and found.carried is not None:
                found.save(update_fields=["carried"])
                count += 1
    return count
