"""Which API key a model request carries: the settings' key goes only where
the settings' model goes, and a profile's own key comes only from a variable whose name the
allow-list accepts — checked when the profile is saved and again when it is used.

The requests are real HTTP requests to OpenAI-compatible servers on loopback; what they carry
is read from the recorded headers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents import llm, loop
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import AgentProfile, AgentRun, ChatSession
from tests.support.openai_server import FakeOpenAI
from tests.support.web import api_client_for, client_for

GLOBAL_KEY = "sk-test-123"  # what the `openai_server` fixture configures


@pytest.fixture
def elsewhere() -> Iterator[FakeOpenAI]:
    """A second server: a profile's own endpoint, not the settings' one."""
    fake = FakeOpenAI()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def run_with_profile(user: Any, profile: str) -> AgentRun:
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_update(session_id=session.pk, profile=profile)
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    return loop.execute_run(run_id=run.pk)


def authorization(server: FakeOpenAI) -> list[str]:
    # Header names are case-insensitive (the async client writes them in lower case).
    return [
        next((v for k, v in r["headers"].items() if k.lower() == "authorization"), "")
        for r in server.requests
    ]


def everything_sent(*servers: FakeOpenAI) -> str:
    return repr([r for server in servers for r in server.requests])


# --- the settings' key -------------------------------------------------------------------------


def test_a_profile_with_its_own_base_never_gets_the_settings_key(
    openai_server: FakeOpenAI, elsewhere: FakeOpenAI, user: Any, monkeypatch: Any
) -> None:
    # litellm would also read a provider's own variable when no key is given: not for
    # someone else's server either.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    services.profile_create(name="outside", model="openai/gpt-4o-mini", api_base=elsewhere.base_url)
    elsewhere.answer("Hello from elsewhere.")
    run = run_with_profile(user, "outside")

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert openai_server.requests == [] and len(elsewhere.requests) == 1
    sent = everything_sent(elsewhere)
    assert GLOBAL_KEY not in sent and "sk-from-the-environment" not in sent


def test_a_profile_on_the_settings_server_keeps_the_settings_key(
    openai_server: FakeOpenAI, user: Any
) -> None:
    # Its own model on the same server (no base of its own, or the same base spelled out).
    services.profile_create(name="inherits", model="openai/gpt-4o")
    services.profile_create(
        name="same-base", model="openai/gpt-4o", api_base=openai_server.base_url + "/"
    )
    openai_server.answer("one", model="gpt-4o")
    openai_server.answer("two", model="gpt-4o")
    assert run_with_profile(user, "inherits").status == AgentRun.Status.SUCCEEDED
    assert run_with_profile(user, "same-base").status == AgentRun.Status.SUCCEEDED
    assert authorization(openai_server) == [f"Bearer {GLOBAL_KEY}"] * 2


def test_the_settings_key_stays_with_the_settings_provider(settings: Any) -> None:
    settings.PLANBOARD_LLM_MODEL = "openai/gpt-4o-mini"
    settings.PLANBOARD_LLM_API_BASE = None
    settings.PLANBOARD_LLM_API_KEY = "sk-openai"
    assert llm.request_credentials(model="openai/gpt-4o", api_base=None, api_key=None) == (
        None,
        "sk-openai",
    )
    # Another provider's own endpoint: the OpenAI key is not sent to it.
    assert llm.request_credentials(
        model="anthropic/claude-3-5-sonnet-20241022", api_base=None, api_key=None
    ) == (None, None)
    # A server of the profile's own: no key at all rather than the settings' one (a
    # placeholder stops litellm from reading a provider's variable for it).
    base, key = llm.request_credentials(
        model="openai/gpt-4o", api_base="http://127.0.0.1:1/v1", api_key=None
    )
    assert base == "http://127.0.0.1:1/v1" and key == llm.NO_KEY
    # Its own key goes with it.
    assert llm.request_credentials(
        model="openai/gpt-4o", api_base="http://127.0.0.1:1/v1", api_key="sk-own"
    ) == ("http://127.0.0.1:1/v1", "sk-own")


# --- a profile's own key -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["DJANGO_SECRET_KEY", "DATABASE_URL", "PLANBOARD_LLM_API_KEY", "OPENAI_API_KEY", "PATH"],
)
def test_a_profile_may_not_name_just_any_variable(db: Any, name: str) -> None:
    with pytest.raises(PlanError, match="PLANBOARD_LLM_KEY_"):
        services.profile_create(name="thief", api_key_env=name)
    profile = services.profile_create(name="honest")
    with pytest.raises(PlanError, match="PLANBOARD_LLM_KEY_"):
        services.profile_update(profile_id=profile.pk, api_key_env=name)
    assert AgentProfile.objects.get(pk=profile.pk).api_key_env == ""
    assert not AgentProfile.objects.filter(name="thief").exists()


def test_the_prefix_alone_is_not_a_variable_name(db: Any) -> None:
    with pytest.raises(PlanError, match="PLANBOARD_LLM_KEY_"):
        services.profile_create(name="bare", api_key_env="PLANBOARD_LLM_KEY_")


def test_a_key_from_an_allowed_variable_goes_to_the_profiles_server(
    openai_server: FakeOpenAI, elsewhere: FakeOpenAI, user: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("PLANBOARD_LLM_KEY_ACME", "sk-acme-own")
    services.profile_create(
        name="acme",
        model="openai/gpt-4o-mini",
        api_base=elsewhere.base_url,
        api_key_env="PLANBOARD_LLM_KEY_ACME",
    )
    elsewhere.answer("Hello from Acme.")
    assert run_with_profile(user, "acme").status == AgentRun.Status.SUCCEEDED
    assert authorization(elsewhere) == ["Bearer sk-acme-own"]
    assert GLOBAL_KEY not in everything_sent(elsewhere)


def test_the_prefix_is_a_setting(db: Any, settings: Any) -> None:
    settings.PLANBOARD_PROFILE_KEY_PREFIX = "VAULT_LLM_"
    assert services.profile_create(name="vault", api_key_env="VAULT_LLM_TEAM").api_key_env
    with pytest.raises(PlanError, match="VAULT_LLM_"):
        services.profile_create(name="old", api_key_env="PLANBOARD_LLM_KEY_TEAM")


def test_a_forbidden_variable_already_stored_is_never_read(
    openai_server: FakeOpenAI, elsewhere: FakeOpenAI, user: Any, monkeypatch: Any
) -> None:
    """A profile saved before the rule (or edited in the database) still cannot read it."""
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-django-secret")
    AgentProfile.objects.create(
        name="legacy",
        model="openai/gpt-4o-mini",
        api_base=elsewhere.base_url,
        api_key_env="DJANGO_SECRET_KEY",
    )
    run = run_with_profile(user, "legacy")

    assert run.status == AgentRun.Status.FAILED
    assert "'legacy'" in run.error and "DJANGO_SECRET_KEY" in run.error
    assert "PLANBOARD_LLM_KEY_" in run.error
    assert elsewhere.requests == [] and openai_server.requests == []
    assert "the-django-secret" not in run.error


def test_the_api_and_the_admin_refuse_a_forbidden_variable(staff_admin: Any) -> None:
    api = api_client_for(staff_admin)
    response = api.post(
        "/api/profiles/", {"name": "x", "api_key_env": "DJANGO_SECRET_KEY"}, format="json"
    )
    assert response.status_code == 400
    assert "PLANBOARD_LLM_KEY_" in response.json()["error"]

    staff_admin.is_superuser = True
    staff_admin.save()
    client = client_for(staff_admin)
    page = client.post(
        "/admin/planboard/agentprofile/add/",
        {
            "name": "sneaky",
            "api_key_env": "DATABASE_URL",
            "user_budget_period": "month",
            "enabled": "on",
        },
    )
    assert page.status_code == 200  # the form again, with the error on it
    assert "PLANBOARD_LLM_KEY_" in page.content.decode()
    assert not AgentProfile.objects.filter(name="sneaky").exists()


def test_without_a_profile_the_settings_model_gets_the_settings_key(
    openai_server: FakeOpenAI, user: Any
) -> None:
    session: ChatSession = services.session_create(owner=user, need_user_confirm=False)
    openai_server.answer("Hi.")
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    assert loop.execute_run(run_id=run.pk).status == AgentRun.Status.SUCCEEDED
    assert authorization(openai_server) == [f"Bearer {GLOBAL_KEY}"]
