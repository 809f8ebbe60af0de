"""A profile's per-person budget and configured prices over the REST API and in the admin."""

from __future__ import annotations

from typing import Any

from planboard.models import AgentProfile
from tests.support.web import api_client_for, client_for


def test_staff_set_per_person_budgets_and_prices_over_the_api(staff_admin: Any, user: Any) -> None:
    api = api_client_for(staff_admin)
    body = {
        "name": "llama",
        "model": "openai/my-own-llama",
        "user_budget_period": "week",
        "user_budget_usd": "12.50",
        "user_budget_tokens": 2_000_000,
        "price_input_per_mtok": "0.2",
        "price_output_per_mtok": "0.8",
    }
    created = api.post("/api/profiles/", body, format="json")
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["user_budget_period"] == "week"
    assert (data["user_budget_usd"], data["user_budget_tokens"]) == (12.5, 2_000_000)
    assert (data["price_input_per_mtok"], data["price_output_per_mtok"]) == (0.2, 0.8)

    url = f"/api/profiles/{data['id']}/"
    cleared = api.patch(url, {"user_budget_usd": None, "user_budget_period": "day"}, format="json")
    assert cleared.status_code == 200, cleared.json()
    assert (cleared.json()["user_budget_usd"], cleared.json()["user_budget_period"]) == (
        None,
        "day",
    )
    half = api.patch(url, {"price_output_per_mtok": None}, format="json")
    assert half.status_code == 400 and "both" in half.json()["error"]
    wrong = api.patch(url, {"user_budget_period": "year"}, format="json")
    assert wrong.status_code == 400
    assert AgentProfile.objects.get(name="llama").user_budget_period == "day"

    # People who use the profile see what it is, not how it is set up; only admins change it.
    person = api_client_for(user)
    assert "user_budget_tokens" not in person.get(url).json()
    assert person.patch(url, {"user_budget_tokens": None}, format="json").status_code == 403


def test_the_admin_form_takes_budgets_and_prices(staff_admin: Any) -> None:
    staff_admin.is_superuser = True
    staff_admin.save()
    client = client_for(staff_admin)
    page = client.post(
        "/admin/planboard/agentprofile/add/",
        {
            "name": "metered",
            "user_budget_period": "week",
            "user_budget_tokens": "50000",
            "price_input_per_mtok": "1",
            "price_output_per_mtok": "",
            "enabled": "on",
        },
    )
    assert page.status_code == 200 and "both" in page.content.decode()
    assert not AgentProfile.objects.filter(name="metered").exists()
    page = client.post(
        "/admin/planboard/agentprofile/add/",
        {
            "name": "metered",
            "user_budget_period": "week",
            "user_budget_tokens": "50000",
            "price_input_per_mtok": "1",
            "price_output_per_mtok": "3",
            "enabled": "on",
        },
    )
    assert page.status_code == 302, page.content.decode()[:2000]
    profile = AgentProfile.objects.get(name="metered")
    assert (profile.user_budget_period, profile.user_budget_tokens) == ("week", 50_000)
    assert profile.price_output_per_mtok == 3
