"""Staff-entered URLs (toolsets, a profile's api_base) never point Planboard at this machine,
the cloud's metadata service or private networks, unless the operator allows the network.
These tests check the rule when a URL is saved; tests/agents/test_outbound_http.py checks it
when a connection is made. Every test allows 127.0.0.1/32 only (tests/conftest.py)."""

from __future__ import annotations

import re
from ipaddress import ip_address
from typing import Any

import pytest
from django.test import Client

from planboard import outbound, services
from planboard.exceptions import PlanError
from planboard.models import AgentProfile, Toolset
from tests.support.admin import toolset_form
from tests.support.dns import FakeDNS
from tests.support.env import settings_probe
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

REFUSED = [
    ("169.254.169.254", "link-local"),  # the cloud metadata service
    ("127.0.0.2", "loopback"),  # outside 127.0.0.1/32
    ("10.0.0.5", "private"),
    ("172.16.3.4", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "reserved"),  # carrier-grade NAT
    ("0.0.0.0", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("fd12:3456::1", "unique-local"),
    ("ff02::1", "multicast"),
    ("::ffff:169.254.169.254", "link-local"),  # IPv4-mapped
    ("::ffff:10.0.0.1", "private"),
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254
]


@pytest.mark.parametrize(("address", "kind"), REFUSED)
def test_non_public_addresses_are_refused(address: str, kind: str) -> None:
    refusal = outbound.refusal(ip_address(address))
    assert refusal is not None and refusal.startswith(kind)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_fine(address: str) -> None:
    assert outbound.refusal(ip_address(address)) is None


def test_the_allow_list_opens_exactly_its_networks(settings: Any) -> None:
    assert outbound.refusal(ip_address("127.0.0.1")) is None
    assert outbound.refusal(ip_address("::ffff:127.0.0.1")) is None
    assert outbound.refusal(ip_address("127.0.0.2")) == "loopback"
    settings.PLANBOARD_TOOL_ALLOWED_NETWORKS = "10.1.0.0/16, fd00::/8"
    assert outbound.refusal(ip_address("10.1.200.3")) is None
    assert outbound.refusal(ip_address("fd00::7")) is None
    assert outbound.refusal(ip_address("10.2.0.1")) == "private"
    assert outbound.refusal(ip_address("127.0.0.1")) == "loopback"
    settings.PLANBOARD_TOOL_ALLOWED_NETWORKS = []
    assert outbound.refusal(ip_address("127.0.0.1")) == "loopback"


def test_a_bad_network_is_named() -> None:
    with pytest.raises(ValueError, match=re.escape("'10.0.0.0/33' is not a network")):
        outbound.parse_networks("127.0.0.1/32,10.0.0.0/33")


def test_the_default_allow_list_is_loopback_when_embedded_and_empty_in_production() -> None:
    code = "result = list(settings.PLANBOARD_TOOL_ALLOWED_NETWORKS)"
    assert settings_probe({}, code) == ["127.0.0.0/8", "::1/128"]
    production = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "probe-only-secret-key-1234567"}
    assert settings_probe(production, code) == []
    assert settings_probe({"REDIS_URL": "redis://127.0.0.1:6379/0"}, code) == []
    chosen = {**production, "PLANBOARD_TOOL_ALLOWED_NETWORKS": "10.8.0.0/16"}
    assert settings_probe(chosen, code) == ["10.8.0.0/16"]


def test_a_bad_allow_list_stops_start_up() -> None:
    with pytest.raises(AssertionError, match="is not a network"):
        settings_probe({"PLANBOARD_TOOL_ALLOWED_NETWORKS": "intranet"}, "result = 1")


# --- at save: toolsets -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.2:8000/mcp",
        "http://[::1]/mcp",
        "http://10.0.0.5/mcp",
        "http://[::ffff:a9fe:a9fe]/mcp",
    ],
)
def test_toolsets_cannot_be_saved_pointing_inside(superuser: Any, url: str) -> None:
    with pytest.raises(PlanError, match="PLANBOARD_TOOL_ALLOWED_NETWORKS") as refused:
        services.toolset_create(user=superuser, name="inside", kind="http", url=url)
    assert refused.value.message.startswith("'url': ")
    assert not Toolset.objects.filter(name="inside").exists()


def test_names_are_checked_on_the_address_they_resolve_to(
    superuser: Any, fake_dns: FakeDNS
) -> None:
    fake_dns.names["metadata.test"] = ["169.254.169.254"]
    fake_dns.names["mixed.test"] = ["127.0.0.1", "10.0.0.9"]  # one bad address is enough
    fake_dns.names["tools.test"] = ["127.0.0.1"]
    with pytest.raises(PlanError, match=r"metadata.test resolves to 169.254.169.254, which is a "):
        services.toolset_create(user=superuser, name="a", kind="http", url="http://metadata.test/")
    with pytest.raises(PlanError, match=r"mixed.test resolves to 10.0.0.9, which is a private"):
        services.toolset_create(user=superuser, name="b", kind="http", url="https://mixed.test/")
    ok = services.toolset_create(user=superuser, name="c", kind="http", url="http://tools.test:81/")
    # Not resolvable (yet): nothing to check now; every connection checks again.
    later = services.toolset_create(
        user=superuser, name="d", kind="http", url="https://nowhere.test"
    )
    assert {ok.name, later.name} == {"c", "d"}


def test_changing_a_url_is_checked_too(superuser: Any) -> None:
    toolset = services.toolset_create(
        user=superuser, name="web", kind="http", url="http://127.0.0.1:8000/mcp"
    )
    with pytest.raises(PlanError, match=re.escape("127.0.0.2 is a loopback address")):
        services.toolset_update(toolset_id=toolset.pk, user=superuser, url="http://127.0.0.2:8000/")
    toolset.refresh_from_db()
    assert toolset.url == "http://127.0.0.1:8000/mcp"


def test_the_api_refuses_with_a_clear_message(superuser: Any) -> None:
    client = api_client_for(superuser)
    body = {"name": "meta", "kind": "http", "url": "http://169.254.169.254/"}
    response = client.post("/api/toolsets/", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "address_not_allowed"
    assert "169.254.169.254 is a link-local" in response.json()["error"]


def test_the_admin_form_shows_the_refusal(admin_client: Client) -> None:
    data = toolset_form(name="meta", title="", url="http://169.254.169.254/latest")
    response = admin_client.post("/admin/planboard/toolset/add/", data)
    assert response.status_code == 200
    assert "169.254.169.254 is a link-local" in response.content.decode()
    assert not Toolset.objects.filter(name="meta").exists()


# --- at save: a profile's api_base --------------------------------------------------------------


def test_profiles_cannot_point_their_model_inside(superuser: Any, fake_dns: FakeDNS) -> None:
    fake_dns.names["llm.test"] = ["192.168.0.10"]
    for base in ("http://169.254.169.254/v1", "http://127.0.0.2:11434", "http://llm.test/v1"):
        with pytest.raises(PlanError, match=r"'api_base': .*PLANBOARD_TOOL_ALLOWED_NETWORKS"):
            services.profile_create(name="inside", model="openai/x", api_base=base)
    assert not AgentProfile.objects.filter(name="inside").exists()
    profile = services.profile_create(name="ok", model="openai/x", api_base="http://127.0.0.1:1/")
    with pytest.raises(PlanError, match=re.escape("10.0.0.1 is a private address")):
        services.profile_update(profile_id=profile.pk, api_base="https://10.0.0.1/v1")
    profile.refresh_from_db()
    assert profile.api_base == "http://127.0.0.1:1/"


def test_the_profile_api_and_admin_refuse_too(superuser: Any, admin_client: Client) -> None:
    client = api_client_for(superuser)
    body = {"name": "meta", "model": "openai/x", "api_base": "http://169.254.169.254/v1"}
    response = client.post("/api/profiles/", body, format="json")
    assert response.status_code == 400 and response.json()["code"] == "address_not_allowed"

    form = {"name": "meta", "model": "openai/x", "api_base": "http://[fd00::1]/v1"}
    form |= {"max_steps": "", "budget_usd": "", "budget_tokens": "", "enabled": "on"}
    response = admin_client.post("/admin/planboard/agentprofile/add/", form)
    assert response.status_code == 200
    assert "unique-local address" in response.content.decode()
    assert not AgentProfile.objects.filter(name="meta").exists()
