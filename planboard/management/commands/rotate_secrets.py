"""Re-encrypt every stored secret under the first of PLANBOARD_SECRETS_KEYS (after a new key
was put first; the old one can be dropped once this has run)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from planboard.services import (
    input_rounds_rotate_secrets,
    notification_settings_rotate_secrets,
    toolset_rotate_secrets,
)


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        toolsets = toolset_rotate_secrets()
        hooks = notification_settings_rotate_secrets()
        rounds = input_rounds_rotate_secrets()
        self.stdout.write(
            f"Re-encrypted the secrets of {toolsets} toolsets, the webhook secrets of {hooks} "
            f"notification settings and the server state of {rounds} waiting questions under "
            "the first key."
        )
