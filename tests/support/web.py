"""Helpers for tests over HTTP: signed-in clients (a page's session cookie, the REST API's forced
authentication) and the JSON a page embeds."""

from __future__ import annotations

import json
import re
from typing import Any

from django.test import Client
from rest_framework.test import APIClient

from planboard import services
from planboard.models import ChatSession, Plan
from planboard.services import Actor

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def page_data(response: Any, element_id: str = "pb-page") -> dict[str, Any]:
    """The JSON a page embeds with json_script."""
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no #{element_id} in the page"
    return json.loads(match.group(1))


def client_for(user: Any) -> Client:
    """A browser signed in as `user` (a session cookie): pages, the admin, forms."""
    client = Client()
    client.force_login(user)
    return client


def api_client_for(user: Any) -> APIClient:
    """A REST client authenticated as `user`."""
    client = APIClient()
    client.force_authenticate(user)
    return client


def finished_plan(chat_session: ChatSession, actor: Actor, name: str = "Old trip") -> Plan:
    plan, _ = services.plan_create(
        session_id=chat_session.pk,
        actor=actor,
        name=name,
        subtasks=[{"name": "Pack bags"}, {"name": "Water plants"}],
    )
    services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="Went well")
    plan.refresh_from_db()
    return plan
