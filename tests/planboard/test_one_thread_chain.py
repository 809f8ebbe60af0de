"""Under ASGI the whole middleware chain and the view run in one thread
(`planboard.security.OneThreadMiddleware`): no middleware is left in async mode, where
`MiddlewareMixin` hands each hook to a thread and back; a message posted through the ASGI
handler is served as before."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.handlers.asgi import ASGIHandler
from django.test import AsyncClient

from planboard import services
from planboard.models import AgentRun


def test_the_innermost_middleware_is_sync_only() -> None:
    assert settings.MIDDLEWARE[-1] == "planboard.security.OneThreadMiddleware"
    assert settings.MIDDLEWARE[-2] == "axes.middleware.AxesMiddleware"  # last, as axes asks


def test_no_middleware_runs_in_async_mode_under_asgi() -> None:
    handler = ASGIHandler()  # loads the chain as daphne's does (async mode)
    hooks = [
        *handler._view_middleware,
        *handler._template_response_middleware,
        *handler._exception_middleware,
    ]
    instances = {id(hook.__self__): hook.__self__ for hook in hooks}.values()
    assert instances  # CSRF's process_view at least
    assert not [type(m).__name__ for m in instances if iscoroutinefunction(m)]


@pytest.mark.django_db(transaction=True)
async def test_a_message_posted_through_the_asgi_handler_queues_a_run() -> None:
    from asgiref.sync import sync_to_async

    def prepare() -> tuple[Any, int]:
        user = get_user_model().objects.create_user("asgi-poster")
        return user, services.session_create(owner=user, title="Trip").pk

    user, session_id = await sync_to_async(prepare)()
    client = AsyncClient()
    await client.aforce_login(user)
    answer = await client.post(
        f"/api/sessions/{session_id}/messages/", {"content": "Plan a trip"}, "application/json"
    )
    assert answer.status_code == 202, answer.content
    count = await AgentRun.objects.filter(session_id=session_id).acount()
    assert answer.json()["run"]["status"] == "queued" and count == 1
