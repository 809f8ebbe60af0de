"""Create the local demo accounts if they are missing (idempotent); print how to log in.

`demo` is an ordinary user to try the app with; `admin` is a superuser for `/admin/`. Their
passwords are well known, so this is for a local machine only: with `DJANGO_DEBUG=0` nothing is
created unless the passwords are given explicitly through the environment.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from planboard import services
from planboard.models import AgentProfile

DEMO_USERNAME = "demo"
ADMIN_USERNAME = "admin"
# Local-only defaults; override them with PLANBOARD_DEMO_PASSWORD / PLANBOARD_ADMIN_PASSWORD.
DEFAULT_DEMO_PASSWORD = "planboard-demo"  # noqa: S105
DEFAULT_ADMIN_PASSWORD = "planboard-admin"  # noqa: S105


DEMO_PROFILES = (
    (
        "researcher",
        "Researcher",
        "Finds and compares options; gathers facts.",
        "Look things up before deciding; compare at least two options and say why one wins.",
    ),
    (
        "booker",
        "Booker",
        "Books transport, rooms, tickets and venues.",
        "Confirm dates and prices before booking; record confirmation details in the outcome.",
    ),
    (
        "writer",
        "Writer",
        "Drafts itineraries, outlines and summaries.",
        "Write clear, skimmable markdown: short headings, lists and tables where they help.",
    ),
)


def demo_credentials() -> tuple[str, str]:
    return DEMO_USERNAME, os.environ.get("PLANBOARD_DEMO_PASSWORD") or DEFAULT_DEMO_PASSWORD


def admin_credentials() -> tuple[str, str]:
    return ADMIN_USERNAME, os.environ.get("PLANBOARD_ADMIN_PASSWORD") or DEFAULT_ADMIN_PASSWORD


class Command(BaseCommand):
    help = "Create the local demo user and admin if missing, and print their logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset-passwords",
            action="store_true",
            help="Set the passwords again even if the accounts exist.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        explicit = os.environ.get("PLANBOARD_DEMO_PASSWORD") and os.environ.get(
            "PLANBOARD_ADMIN_PASSWORD"
        )
        if not settings.DEBUG and not explicit:
            self.stdout.write(
                self.style.WARNING(
                    "DJANGO_DEBUG=0: no demo accounts created (their default passwords are "
                    "public). Set PLANBOARD_DEMO_PASSWORD and PLANBOARD_ADMIN_PASSWORD to create "
                    "them anyway, or use `manage.py createsuperuser`."
                )
            )
            return
        reset = bool(options.get("reset_passwords"))
        for (username, password), superuser in (
            (demo_credentials(), False),
            (admin_credentials(), True),
        ):
            created, changed = self._ensure(username, password, superuser=superuser, reset=reset)
            if created or changed:
                note = "created" if created else "password reset"
                shown = password
            else:
                note = "already exists"
                shown = f"{password} (unless you changed it)"
            role = "admin, opens /admin/" if superuser else "demo user"
            self.stdout.write(f"{role}: {username} / {shown}  [{note}; local use only]")
        self._ensure_demo_profiles()

    def _ensure_demo_profiles(self) -> None:
        """One demo agent profile per kind of subtask; the demo model assigns them in the
        plans it drafts, so the board shows who does what and what each step cost."""
        existing = set(AgentProfile.objects.values_list("name", flat=True))
        for name, title, description, instructions in DEMO_PROFILES:
            if name not in existing:
                services.profile_create(
                    name=name,
                    title=title,
                    description=description,
                    instructions=instructions,
                    model="planboard-demo/offline",
                    max_steps=20,
                )

    def _ensure(
        self, username: str, password: str, *, superuser: bool, reset: bool
    ) -> tuple[bool, bool]:
        users = get_user_model()
        user, created = users.objects.get_or_create(
            username=username,
            defaults={"is_staff": superuser, "is_superuser": superuser},
        )
        if created or reset:
            user.set_password(password)
            user.save()
        return created, reset and not created
