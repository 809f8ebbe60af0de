"""With DEBUG on (the embedded mode `make run` starts), unknown addresses and a view's 404 show
the site's own 404 page, never Django's technical one; other answers are left as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse
from django.test import AsyncClient, Client
from django.urls import reverse

from planboard.models import ChatSession
from planboard.web.not_found import BrandedNotFoundMiddleware
from tests.support.env import settings_probe
from tests.support.web import client_for

BRANDED = "This page does not exist"
TECHNICAL = ("Using the URLconf", "Technical 404", "Raised by:", "Django tried these URL patterns")


@pytest.fixture
def debug_on(settings: Any) -> None:
    settings.DEBUG = True


def assert_branded(response: Any) -> None:
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert BRANDED in page
    assert 'class="topbar"' in page and f'href="{reverse("web:sessions")}"' in page
    for text in TECHNICAL:
        assert text not in page


def test_an_unknown_address_shows_the_branded_page(debug_on: None, user: Any) -> None:
    assert_branded(client_for(user).get("/no/such/page/"))


def test_an_unknown_address_shows_the_branded_page_signed_out(debug_on: None, db: Any) -> None:
    assert_branded(Client().get("/sessions/nope/"))


def test_a_view_s_404_shows_the_branded_page(debug_on: None, chat_session: ChatSession) -> None:
    stranger = get_user_model().objects.create_user("mallory", password="x")
    response = client_for(stranger).get(reverse("web:session", args=[chat_session.pk]))
    assert_branded(response)
    # The view's reason stays out of the page (it would tell a stranger the session exists).
    assert "No ChatSession matches" not in response.content.decode()


async def test_the_asgi_path_shows_the_branded_page(debug_on: None, db: Any) -> None:
    response = await AsyncClient().get("/no/such/page/")
    assert_branded(response)


def test_the_api_keeps_its_json_404(debug_on: None, user: Any) -> None:
    response = client_for(user).get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert BRANDED not in response.content.decode()


def test_a_missing_slash_still_redirects(debug_on: None, user: Any) -> None:
    response = client_for(user).get("/history")
    assert response.status_code == 301
    assert response["Location"] == "/history/"


def test_pages_that_exist_are_untouched(debug_on: None, user: Any) -> None:
    response = client_for(user).get(reverse("web:sessions"))
    assert response.status_code == 200
    assert BRANDED not in response.content.decode()


def test_a_view_s_own_404_body_is_kept(debug_on: None, rf: Any) -> None:
    """A 404 a view renders on purpose (it matched a URL) keeps its own words."""
    request: HttpRequest = rf.get("/somewhere/")
    request.resolver_match = object()  # type: ignore[assignment]  # a URL pattern matched

    def view(_: HttpRequest) -> HttpResponse:
        return HttpResponse("Gone with the wind", status=404)

    response = BrandedNotFoundMiddleware(view)(request)
    assert isinstance(response, HttpResponse)
    assert response.content == b"Gone with the wind"


def test_with_debug_off_the_middleware_is_not_loaded(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(MiddlewareNotUsed):
        BrandedNotFoundMiddleware(lambda request: HttpResponse())


def test_the_embedded_settings_serve_the_branded_page(tmp_path: Path) -> None:
    """The environment `make run` gives (no DJANGO_DEBUG, no REDIS_URL): DEBUG is on, and an
    unknown address still gets the site's page."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    code = (
        "from django.test import Client\n"
        "response = Client().get('/no/such/page/')\n"
        "result = {'debug': settings.DEBUG, 'embedded': settings.PLANBOARD_EMBEDDED,\n"
        "          'status': response.status_code, 'page': response.content.decode()}\n"
    )
    result = settings_probe(env, code)
    assert result["debug"] is True and result["embedded"] is True
    assert result["status"] == 404
    assert BRANDED in result["page"]
    for text in TECHNICAL:
        assert text not in result["page"]
