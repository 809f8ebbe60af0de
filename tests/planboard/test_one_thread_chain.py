"""Under ASGI a request runs in one thread, entered once (`planboard.web_handler.
OneThreadASGIHandler`): the middleware chain, its hooks and the view are loaded in sync mode,
with no hop between the event loop and a thread inside; a message posted through the ASGI
handler is served as before."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import AsyncToSync, SyncToAsync, iscoroutinefunction
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.test import AsyncClient, RequestFactory
from django.urls import ResolverMatch

from planboard import services
from planboard.asgi import django_asgi_app
from planboard.models import AgentRun
from planboard.web_handler import OneThreadASGIHandler


def test_the_web_process_serves_with_the_one_thread_handler() -> None:
    assert isinstance(django_asgi_app, OneThreadASGIHandler)


def test_the_chain_its_hooks_and_the_view_load_in_sync_mode() -> None:
    handler = OneThreadASGIHandler()
    hooks = [
        *handler._view_middleware,
        *handler._template_response_middleware,
        *handler._exception_middleware,
    ]
    assert handler._view_middleware  # CSRF's process_view at least
    assert not [hook for hook in hooks if iscoroutinefunction(hook)]
    assert iscoroutinefunction(handler._middleware_chain)  # the one hop, at the top


@pytest.mark.django_db
async def test_a_request_crosses_to_a_thread_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """One hop from the event loop to a thread, none back, whatever the chain holds."""
    hops: list[str] = []
    for adapter in (SyncToAsync, AsyncToSync):
        original = adapter.__call__

        def counted(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            hops.append(type(self).__name__)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(adapter, "__call__", counted)
    handler = OneThreadASGIHandler()
    monkeypatch.setattr(handler, "resolve_request", lambda request: ResolverMatch(view, (), {}))
    request = RequestFactory().get("/anything/", HTTP_HOST="127.0.0.1")
    response = await handler.get_response_async(request)
    assert response.status_code == 200 and response.content == b"ok"
    assert hops == ["SyncToAsync"]


def view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


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
