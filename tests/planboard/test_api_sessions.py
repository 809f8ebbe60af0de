"""REST API for chat sessions, the transcript, runs, tokens, and the OpenAPI schema."""

from __future__ import annotations

import cProfile
import json
import pstats
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from planboard import selectors, services
from planboard.models import MESSAGE_MAX, NAME_MAX, AgentRun, ChatSession, Message, Plan
from tests.support import db, env

pytestmark = pytest.mark.django_db


def assert_error(response: Any, status: int, *words: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    for word in words:
        assert word.lower() in body["error"].lower(), body
    return body


class TestSessions:
    def test_create(self, api: APIClient, user: Any) -> None:
        payload = {
            "title": "Move house",
            "need_user_confirm": False,
            "max_subtasks": 5,
            "language": "zh",
        }
        response = api.post("/api/sessions/", payload, "json")
        assert response.status_code == 201, response.content
        body = response.json()
        session = ChatSession.objects.get(pk=body["id"])
        assert session.owner == user
        assert (session.title, session.need_user_confirm, session.max_subtasks) == (
            "Move house",
            False,
            5,
        )
        assert session.language == "zh"
        assert body["current_plan"] is None and body["latest_run"] is None

    def test_create_with_defaults(self, api: APIClient) -> None:
        body = api.post("/api/sessions/", {}, "json").json()
        assert body["need_user_confirm"] is True and body["language"] == "auto"
        assert body["max_subtasks"] is None

    @pytest.mark.parametrize(
        "payload",
        [
            {"title": "x" * (NAME_MAX + 1)},
            {"title": 3},
            {"need_user_confirm": "yes"},
            {"max_subtasks": 0},
            {"max_subtasks": 10**6},
            {"max_subtasks": "3"},
            {"language": "fr"},
            {"colour": "blue"},
        ],
    )
    def test_create_rejects_bad_input(self, api: APIClient, payload: dict) -> None:
        assert_error(api.post("/api/sessions/", payload, "json"), 400)
        assert ChatSession.objects.count() == 0

    def test_list_shows_latest_run(
        self, api: APIClient, chat_session: ChatSession, user: Any, other_user: Any
    ) -> None:
        services.session_create(owner=other_user, title="Not mine")
        services.message_post(session_id=chat_session.pk, author=user, content="Plan my trip")
        response = api.get("/api/sessions/")
        assert response.status_code == 200
        body = response.json()
        assert body["count"] == 1
        row = body["results"][0]
        assert row["id"] == chat_session.pk and row["title"] == "Trip"
        assert row["latest_run"]["status"] == "queued"

    def test_detail_includes_plan_snapshot_and_run(
        self, api: APIClient, plan: Plan, chat_session: ChatSession, user: Any
    ) -> None:
        services.message_post(session_id=chat_session.pk, author=user, content="Go")
        body = api.get(f"/api/sessions/{chat_session.pk}/").json()
        assert body["current_plan"] == selectors.plan_snapshot(plan_id=plan.pk)
        assert body["latest_run"]["status"] == "queued"
        assert body == selectors.session_snapshot(session_id=chat_session.pk)

    def test_update_settings(self, api: APIClient, chat_session: ChatSession) -> None:
        response = api.patch(
            f"/api/sessions/{chat_session.pk}/", {"max_subtasks": 4, "title": "Kyoto"}, "json"
        )
        assert response.status_code == 200, response.content
        chat_session.refresh_from_db()
        assert chat_session.max_subtasks == 4 and chat_session.title == "Kyoto"
        assert_error(api.patch(f"/api/sessions/{chat_session.pk}/", {}, "json"), 400)

    def test_unknown_session_is_404(self, api: APIClient) -> None:
        assert_error(api.get("/api/sessions/424242/"), 404)
        assert_error(api.post("/api/sessions/424242/messages/", {"content": "hi"}, "json"), 404)
        assert api.get("/api/sessions/1234567890123456789012/").status_code == 404


class TestMessages:
    def test_post_queues_a_run_and_dispatches_it(
        self, api: APIClient, chat_session: ChatSession
    ) -> None:
        env.DISPATCHED.clear()
        response = api.post(
            f"/api/sessions/{chat_session.pk}/messages/", {"content": "Plan a trip"}, "json"
        )
        assert response.status_code == 202, response.content
        body = response.json()
        run = AgentRun.objects.get(session=chat_session)
        assert body["run"]["id"] == run.pk and body["run"]["status"] == "queued"
        assert body["message"]["content"] == "Plan a trip"
        assert body["message"]["role"] == "user" and body["message"]["author"] == "alice"

    def test_an_owners_post_runs_eight_statements(
        self, api: APIClient, chat_session: ChatSession
    ) -> None:
        """The owner passes the access check on one row (no visibility query), then the
        service: lock the session, read its latest run, lock the owner, read their active
        runs (admission), insert the run and the message, set the title."""
        with db.statements() as posting:
            response = api.post(
                f"/api/sessions/{chat_session.pk}/messages/", {"content": "Plan a trip"}, "json"
            )
        assert response.status_code == 202, response.content
        ran = [s for s in posting if "SAVEPOINT" not in s]
        assert len(ran) == 8, ran
        assert not [s for s in ran if "teammembership" in s.lower()]

    def test_post_feeds_the_active_run(
        self, api: APIClient, chat_session: ChatSession, user: Any
    ) -> None:
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="one")
        body = api.post(
            f"/api/sessions/{chat_session.pk}/messages/", {"content": "two"}, "json"
        ).json()
        assert body["run"]["id"] == run.pk
        assert AgentRun.objects.filter(session=chat_session).count() == 1

    @pytest.mark.parametrize(
        "payload",
        [{}, {"content": ""}, {"content": "   "}, {"content": None}, {"content": 7}],
    )
    def test_bad_content(self, api: APIClient, chat_session: ChatSession, payload: dict) -> None:
        assert_error(api.post(f"/api/sessions/{chat_session.pk}/messages/", payload, "json"), 400)
        assert not Message.objects.exists() and not AgentRun.objects.exists()

    def test_oversized_message(self, api: APIClient, chat_session: ChatSession) -> None:
        payload = {"content": "x" * (MESSAGE_MAX + 1)}
        body = assert_error(
            api.post(f"/api/sessions/{chat_session.pk}/messages/", payload, "json"), 400
        )
        assert "content" in body["fields"]
        assert not Message.objects.exists()

    def test_transcript_pages_with_after(
        self, api: APIClient, chat_session: ChatSession, user: Any
    ) -> None:
        for text in ("a", "b", "c"):
            services.message_post(session_id=chat_session.pk, author=user, content=text)
        path = f"/api/sessions/{chat_session.pk}/messages/"
        body = api.get(path, {"limit": 2}).json()
        assert [m["content"] for m in body["results"]] == ["a", "b"] and body["has_more"]
        body = api.get(path, {"after": body["results"][-1]["id"]}).json()
        assert [m["content"] for m in body["results"]] == ["c"] and not body["has_more"]
        assert_error(api.get(path, {"after": "x"}), 400)
        assert_error(api.get(path, {"limit": 0}), 400)

    def test_rate_limited(
        self, api: APIClient, chat_session: ChatSession, monkeypatch: Any
    ) -> None:
        # The throttle copies the configured rates when DRF is imported; patch them here.
        rates = {**ScopedRateThrottle.THROTTLE_RATES, "messages": "2/min"}
        monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", rates)
        path = f"/api/sessions/{chat_session.pk}/messages/"
        assert api.post(path, {"content": "1"}, "json").status_code == 202
        assert api.post(path, {"content": "2"}, "json").status_code == 202
        response = api.post(path, {"content": "3"}, "json")
        body = assert_error(response, 429)
        assert body["code"] == "throttled"
        assert "Retry-After" in response
        assert Message.objects.count() == 2
        # Reading is not limited.
        assert api.get(path).status_code == 200


class TestCancel:
    def test_cancel_queued_run(self, api: APIClient, chat_session: ChatSession, user: Any) -> None:
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="go")
        response = api.post(f"/api/sessions/{chat_session.pk}/cancel/")
        assert response.status_code == 200, response.content
        assert response.json()["run"]["status"] == "cancelled"
        run.refresh_from_db()
        assert run.status == "cancelled"

    def test_cancel_without_run(self, api: APIClient, chat_session: ChatSession) -> None:
        response = api.post(f"/api/sessions/{chat_session.pk}/cancel/")
        assert response.status_code == 200 and response.json() == {"run": None}


class TestToken:
    def test_obtain_token_and_use_it(self, user: Any, chat_session: ChatSession) -> None:
        client = APIClient()
        response = client.post(
            "/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, "json"
        )
        assert response.status_code == 200, response.content
        key = response.json()["token"]
        assert Token.objects.get(user=user).key == key
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.get(f"/api/sessions/{chat_session.pk}/").status_code == 200
        # Token clients are not subject to CSRF (no ambient credentials).
        assert client.post("/api/sessions/", {}, "json").status_code == 201

    def test_wrong_password(self, user: Any) -> None:
        response = APIClient().post(
            "/api/auth/token/", {"username": "alice", "password": "nope"}, "json"
        )
        assert_error(response, 400, "unable to log in")
        assert not Token.objects.exists()

    def test_bad_token_is_401(self, chat_session: ChatSession) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
        assert_error(client.get("/api/sessions/"), 401, "token")


class TestSchema:
    def test_schema_generates_without_warnings(self, tmp_path: Any) -> None:
        target = tmp_path / "schema.json"
        # --fail-on-warn turns any generator warning into an error; --validate checks OpenAPI.
        call_command(
            "spectacular",
            "--file",
            str(target),
            "--format",
            "openapi-json",
            "--validate",
            "--fail-on-warn",
        )
        schema = json.loads(target.read_text())
        paths = schema["paths"]
        for path in (
            "/api/auth/token/",
            "/api/sessions/",
            "/api/sessions/{session_id}/",
            "/api/sessions/{session_id}/messages/",
            "/api/sessions/{session_id}/cancel/",
            "/api/plans/",
            "/api/plans/{plan_id}/",
            "/api/plans/{plan_id}/subtasks/",
            "/api/plans/{plan_id}/subtasks/{subtask_id}/",
            "/api/plans/{plan_id}/events/",
        ):
            assert path in paths, path
        params = {p["name"] for p in paths["/api/plans/"]["get"]["parameters"]}
        assert {"state", "owner", "team", "created_after", "created_before", "search"} <= params

    def test_schema_and_docs_are_served_to_people_signed_in(self, user: Any) -> None:
        client = APIClient()
        client.force_login(user)  # a session: the docs pages are plain Django views
        response = client.get("/api/schema/")
        assert response.status_code == 200
        assert b"openapi" in response.content
        docs = client.get("/api/docs/")
        assert docs.status_code == 200 and b"swagger" in docs.content.lower()


# Python function calls per posted message through the browser's path (session cookie, CSRF
# token, the throttle), the in-process share of benchmark 9 that moves with no machine's speed
# (here without Celery: the tests record dispatches). With the login session, its user, the
# run and the message read and written through planboard/sql.py: 8,086 on SQLite, 8,828 on
# PostgreSQL (psycopg adapts each value in Python) when run alone. The count grows with what ran
# before in the process (9,262 after this file's other tests; the whole suite adds about 500
# more), against 20,400 for the path before it was cut: the ceilings catch a return to that,
# and leave room for the suite's order and a library update.
POST_CALLS_CEILING = {"sqlite": 10_000, "postgresql": 11_000}


@pytest.mark.django_db(transaction=True)
def test_a_posted_message_costs_few_python_calls(user: Any) -> None:
    sessions = [services.session_create(owner=user, need_user_confirm=False) for _ in range(11)]
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.cookies["csrftoken"] = "c" * 32

    def post(session: ChatSession) -> Any:
        return client.post(
            f"/api/sessions/{session.pk}/messages/",
            {"content": "Plan a trip"},
            content_type="application/json",
            HTTP_X_CSRFTOKEN="c" * 32,
        )

    post(sessions[0])  # first-use caches out of the count
    profile = cProfile.Profile()
    profile.enable()
    for session in sessions[1:]:
        response = post(session)
    profile.disable()
    assert response.status_code == 202, response.content
    calls = pstats.Stats(profile).total_calls / (len(sessions) - 1)  # type: ignore[attr-defined]
    ceiling = POST_CALLS_CEILING[db.vendor()]
    assert calls < ceiling, f"{calls:.0f} Python calls per posted message"
