"""The app's edges: branded error pages (with DEBUG off), the favicon, the admin's branding,
the API docs' way back, and costs labelled with their scope and formatted alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path, reverse

from planboard import urls as site_urls
from planboard.models import ChatSession, Plan
from planboard.services import Actor
from tests.support.web import client_for, finished_plan


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


def _denied(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


# This module is also a URLconf: the site's URLs, one view that fails and one that refuses.
urlpatterns = [path("boom/", _boom), path("denied/", _denied), *site_urls.urlpatterns]


# --- error pages ------------------------------------------------------------------------


@pytest.fixture
def no_debug(settings: Any) -> None:
    settings.DEBUG = False
    # The manifest storage needs collectstatic; the pages only need their static URLs.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def test_404_is_the_branded_page_with_a_way_back(no_debug: None, user: Any) -> None:
    response = client_for(user).get("/no/such/page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "This page does not exist" in page
    assert 'class="topbar"' in page and "Planboard" in page
    assert f'href="{reverse("web:sessions")}"' in page
    assert "Technical 404" not in page and "Using the URLconf" not in page


def test_404_of_a_hidden_session_is_the_same_page(
    no_debug: None, chat_session: ChatSession
) -> None:
    stranger = get_user_model().objects.create_user("mallory", password="x")
    response = client_for(stranger).get(reverse("web:session", args=[chat_session.pk]))
    assert response.status_code == 404
    assert "This page does not exist" in response.content.decode()


def test_403_is_the_branded_page(no_debug: None, settings: Any, user: Any) -> None:
    settings.ROOT_URLCONF = __name__
    response = client_for(user).get("/denied/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "You may not open this page" in page
    assert f'href="{reverse("web:sessions")}"' in page


def test_500_is_the_branded_page(no_debug: None, settings: Any, db: Any) -> None:
    settings.ROOT_URLCONF = __name__
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page
    assert 'href="/"' in page and "css/app.css" in page
    assert "a bug" not in page and "Traceback" not in page


# --- favicon, admin, API docs -----------------------------------------------------------


def test_favicon_is_linked_and_answers(user: Any) -> None:
    page = client_for(user).get(reverse("web:sessions")).content.decode()
    assert 'rel="icon" href="/static/img/favicon.svg"' in page
    response = Client().get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/img/favicon.svg"
    svg = Client().get(response["Location"])
    assert svg.status_code == 200
    assert b"<svg" in b"".join(svg.streaming_content)  # type: ignore[attr-defined]


def test_admin_is_branded_and_links_back(staff: Any) -> None:
    page = client_for(staff).get(reverse("admin:index")).content.decode()
    assert "Planboard administration" in page
    assert "<title>Plans, people and tools | Planboard administration</title>" in page
    assert '<a href="/">View site</a>' in page


def test_api_docs_link_back(user: Any) -> None:
    page = client_for(user).get(reverse("api-docs")).content.decode()
    assert f'<nav class="api-back"><a href="{reverse("web:sessions")}">' in page


# --- costs --------------------------------------------------------------------------------


def test_history_list_shows_each_plan_s_cost_labelled(
    user: Any, chat_session: ChatSession, actor: Actor
) -> None:
    plan = finished_plan(chat_session, actor)
    Plan.objects.filter(pk=plan.pk).update(cost_usd="0.017500", tokens=8741)
    page = client_for(user).get(reverse("web:history")).content.decode()
    assert "Cost of this plan" in page
    assert "$0.018 · 8.7k tokens" in page
    assert "0.0175" not in page


def test_session_list_shows_the_session_s_cost_labelled(user: Any, plan: Plan) -> None:
    ChatSession.objects.filter(pk=plan.session_id).update(spent_usd="0.024800", spent_tokens=12404)
    page = client_for(user).get(reverse("web:sessions")).content.decode()
    assert "This session: $0.025 · 12.4k tokens" in page
