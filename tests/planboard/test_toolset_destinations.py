"""A toolset's secrets stay with the destination they were given for: changing where it connects
(the URL's scheme, host or port; the command or its args; the kind) drops the stored `env`,
`headers` and URL credentials unless the same change supplies them again. Credentials inside a
URL are secrets like headers: shown redacted, kept when the redacted form comes back."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from planboard import services
from planboard.exceptions import PlanError
from planboard.models import AgentProfile, Toolset
from planboard.url_secrets import redact_url, redact_urls_in_text, restore_url
from tests.support.admin import toolset_form
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

KEY = "sk-live-0123456789abcdef"
URL = f"https://bot:hunter2-pass@tools.example.com/mcp?key={KEY}&team=blue"
SHOWN = "https://REDACTED:REDACTED@tools.example.com/mcp?key=REDACTED&team=REDACTED"


@pytest.fixture
def remote(superuser: Any) -> Toolset:
    return services.toolset_create(
        user=superuser, name="remote", kind="http", url=URL, headers={"Authorization": "Bearer t0k"}
    )


@pytest.fixture
def program(superuser: Any) -> Toolset:
    return services.toolset_create(
        user=superuser,
        name="prog",
        kind="stdio",
        command="/opt/mcp/search",
        args=["--index", "docs"],
        env={"SEARCH_KEY": "env-secret-4242"},
    )


# --- secrets follow no change of destination ---------------------------------------------------


@pytest.mark.parametrize(
    "new_url",
    [
        "https://evil.example.net/mcp",  # another host
        "http://tools.example.com/mcp",  # another scheme
        "https://tools.example.com:8443/mcp",  # another port
    ],
)
def test_a_new_destination_drops_stored_headers_and_url_credentials(
    superuser: Any, remote: Toolset, new_url: str
) -> None:
    response = api_client_for(superuser).patch(
        f"/api/toolsets/{remote.pk}/", {"url": new_url}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["header_names"] == []
    remote.refresh_from_db()
    assert remote.headers == {} and remote.url == new_url


def test_secrets_given_with_the_new_destination_are_the_ones_kept(
    superuser: Any, remote: Toolset
) -> None:
    services.toolset_update(toolset_id=remote.pk, user=superuser, headers={"X-Team": "blue"})
    services.toolset_update(
        toolset_id=remote.pk,
        user=superuser,
        url="https://other.example.org/mcp?key=new-key-777",
        headers={"Authorization": "Bearer n3w", "X-Team": None},
    )
    remote.refresh_from_db()
    assert remote.headers == {"Authorization": "Bearer n3w"}
    assert remote.url == "https://other.example.org/mcp?key=new-key-777"


def test_the_same_destination_keeps_everything(superuser: Any, remote: Toolset) -> None:
    # Another path on the same scheme, host and port; the host spelled in capitals.
    same = f"https://bot:hunter2-pass@TOOLS.example.com:443/v2/mcp?key={KEY}"
    services.toolset_update(toolset_id=remote.pk, user=superuser, url=same, title="Tools")
    remote.refresh_from_db()
    assert remote.headers == {"Authorization": "Bearer t0k"} and remote.url == same


@pytest.mark.parametrize(
    "change",
    [{"command": "/tmp/other"}, {"args": ["--index", "all"]}, {"args": []}],
)
def test_a_new_program_or_arguments_drop_the_env(
    superuser: Any, program: Toolset, change: dict[str, Any]
) -> None:
    services.toolset_update(toolset_id=program.pk, user=superuser, **change)
    program.refresh_from_db()
    assert program.env == {}


def test_a_new_program_with_its_env_keeps_that_env(superuser: Any, program: Toolset) -> None:
    services.toolset_update(
        toolset_id=program.pk, user=superuser, command="/tmp/other", env={"OTHER": "o-secret-1"}
    )
    program.refresh_from_db()
    assert program.env == {"OTHER": "o-secret-1"}
    # Same program and arguments again: env merges as before.
    services.toolset_update(toolset_id=program.pk, user=superuser, env={"MORE": "m-secret-2"})
    program.refresh_from_db()
    assert program.env == {"OTHER": "o-secret-1", "MORE": "m-secret-2"}


def test_changing_the_kind_drops_every_secret(superuser: Any, program: Toolset) -> None:
    services.toolset_update(
        toolset_id=program.pk, user=superuser, kind="http", url="https://tools.example.com/mcp"
    )
    program.refresh_from_db()
    assert (program.env, program.headers) == ({}, {})


# --- URL credentials are secrets ----------------------------------------------------------------


def test_url_credentials_are_never_shown_back(
    superuser: Any, remote: Toolset, django_user_model: Any
):
    # Whoever may see the configuration never sees the credentials in it (bare staff: none).
    bare = django_user_model.objects.create_user("bare", password="pw-bare-1234", is_staff=True)
    assert api_client_for(superuser).get(f"/api/toolsets/{remote.pk}/").json()["url"] == SHOWN
    for person in (superuser, bare):
        for path in (f"/api/toolsets/{remote.pk}/", "/api/toolsets/"):
            body = api_client_for(person).get(path).content.decode()
            assert KEY not in body and "hunter2" not in body and "blue" not in body


def test_the_redacted_url_round_trips(superuser: Any, remote: Toolset) -> None:
    response = api_client_for(superuser).patch(
        f"/api/toolsets/{remote.pk}/", {"url": SHOWN, "title": "Tools"}, format="json"
    )
    assert response.status_code == 200, response.json()
    remote.refresh_from_db()
    assert remote.url == URL and remote.headers == {"Authorization": "Bearer t0k"}
    # One value replaced, the others kept; a new path on the same destination.
    edited = SHOWN.replace("team=REDACTED", "team=red").replace("/mcp", "/v2")
    services.toolset_update(toolset_id=remote.pk, user=superuser, url=edited)
    remote.refresh_from_db()
    assert remote.url == URL.replace("team=blue", "team=red").replace("/mcp", "/v2")


def test_placeholders_cannot_carry_credentials_to_a_new_destination(
    superuser: Any, remote: Toolset
) -> None:
    moved = SHOWN.replace("tools.example.com", "evil.example.net")
    response = api_client_for(superuser).patch(
        f"/api/toolsets/{remote.pk}/", {"url": moved}, format="json"
    )
    assert response.status_code == 400
    assert "new destination" in response.json()["error"]
    remote.refresh_from_db()
    assert remote.url == URL and remote.headers == {"Authorization": "Bearer t0k"}
    with pytest.raises(PlanError, match="no value is stored"):
        services.toolset_update(toolset_id=remote.pk, user=superuser, url=SHOWN + "&extra=REDACTED")
    with pytest.raises(PlanError, match="new destination"):
        services.toolset_create(user=superuser, name="copy", kind="http", url=SHOWN)


def test_url_redaction_rules() -> None:
    assert redact_url("https://host/mcp") == "https://host/mcp"
    assert redact_url("https://tok3n@host/mcp") == "https://REDACTED@host/mcp"
    assert redact_url("https://host/mcp?a=1&a=2&flag&empty=#frag") == (
        "https://host/mcp?a=REDACTED&a=REDACTED&REDACTED&empty=#REDACTED"
    )
    stored = "https://u:p@host/x?a=1&a=2&bare#f"
    assert restore_url(redact_url(stored), stored, field="url") == stored
    # Restored values count towards the field's length limit.
    long = "https://host/x?k=" + "v" * 400
    with pytest.raises(PlanError, match="longer than 500 characters"):
        restore_url(redact_url(long).replace("/x", "/" + "p" * 200), long, field="url")
    line = 'POST https://u:pw@h.test/mcp?key=abc "HTTP/1.1 200 OK", then http://plain/'
    assert redact_urls_in_text(line) == (
        'POST https://REDACTED:REDACTED@h.test/mcp?key=REDACTED "HTTP/1.1 200 OK", then '
        "http://plain/"
    )


# --- the admin behaves the same -----------------------------------------------------------------


def admin_form(**fields: str | None) -> dict[str, Any]:
    """The change form of `remote` as the admin shows it: the URL and the header redacted."""
    shown = {"name": None, "title": "", "url": SHOWN, "headers": '{"Authorization": "********"}'}
    return toolset_form(**{**shown, **fields})


def test_the_admin_shows_the_url_redacted_and_keeps_it(admin_client: Client, remote: Toolset):
    page = admin_client.get(f"/admin/planboard/toolset/{remote.pk}/change/").content.decode()
    assert KEY not in page and "hunter2" not in page
    assert "key=REDACTED&amp;team=REDACTED" in page
    response = admin_client.post(
        f"/admin/planboard/toolset/{remote.pk}/change/", admin_form(title="Tools")
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    remote.refresh_from_db()
    assert remote.url == URL and remote.headers == {"Authorization": "Bearer t0k"}
    assert remote.title == "Tools"


def test_the_admin_drops_secrets_when_the_destination_changes(
    admin_client: Client, remote: Toolset
) -> None:
    moved = admin_form(url="https://evil.example.net/mcp")
    response = admin_client.post(f"/admin/planboard/toolset/{remote.pk}/change/", moved)
    assert response.status_code == 302
    remote.refresh_from_db()
    assert remote.url == "https://evil.example.net/mcp" and remote.headers == {}
    shown = admin_client.get(response["Location"]).content.decode()
    assert "not kept" in shown and "Authorization" in shown
    # With a new value typed in, that value goes with the new destination.
    again = admin_form(url="https://evil2.example.net/mcp", headers='{"Authorization": "Bearer z"}')
    admin_client.post(f"/admin/planboard/toolset/{remote.pk}/change/", again)
    remote.refresh_from_db()
    assert remote.headers == {"Authorization": "Bearer z"}


def test_the_admin_drops_the_env_of_a_new_program(admin_client: Client, program: Toolset):
    form = admin_form(
        kind="stdio",
        command="/tmp/other",
        args='["--index", "docs"]',
        url="",
        env='{"SEARCH_KEY": "********"}',
        headers="",
    )
    response = admin_client.post(f"/admin/planboard/toolset/{program.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    program.refresh_from_db()
    assert program.command == "/tmp/other" and program.env == {}


# --- a profile's api_base -----------------------------------------------------------------------


def test_a_profiles_api_base_hides_its_credentials(superuser: Any, user: Any) -> None:
    base = f"https://proxy.example.com/v1?api-key={KEY}"
    profile = services.profile_create(name="helper", model="openai/x", api_base=base)
    body = api_client_for(superuser).get(f"/api/profiles/{profile.pk}/").json()
    assert body["api_base"] == "https://proxy.example.com/v1?api-key=REDACTED"
    assert "api_base" not in api_client_for(user).get(f"/api/profiles/{profile.pk}/").json()
    response = api_client_for(superuser).patch(
        f"/api/profiles/{profile.pk}/",
        {"api_base": "https://proxy.example.com/v1?api-key=REDACTED", "title": "Helper"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    profile.refresh_from_db()
    assert profile.api_base == base and profile.title == "Helper"
    moved = api_client_for(superuser).patch(
        f"/api/profiles/{profile.pk}/",
        {"api_base": "https://elsewhere.example.com/v1?api-key=REDACTED"},
        format="json",
    )
    assert moved.status_code == 400 and "new destination" in moved.json()["error"]
    assert AgentProfile.objects.get(pk=profile.pk).api_base == base


def test_the_profile_admin_shows_api_base_redacted(superuser: Any, admin_client: Client) -> None:
    base = f"https://proxy.example.com/v1?api-key={KEY}"
    profile = services.profile_create(name="helper", model="openai/x", api_base=base)
    page = admin_client.get(f"/admin/planboard/agentprofile/{profile.pk}/change/").content.decode()
    assert KEY not in page and "api-key=REDACTED" in page
    response = admin_client.post(
        f"/admin/planboard/agentprofile/{profile.pk}/change/",
        {
            "name": "helper",
            "title": "Helper",
            "model": "openai/x",
            "api_base": "https://proxy.example.com/v1?api-key=REDACTED",
            "user_budget_period": "month",
            "enabled": "on",
            "toolsets": [],
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    profile.refresh_from_db()
    assert profile.api_base == base and profile.title == "Helper"
