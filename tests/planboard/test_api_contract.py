"""Every answer under /api/ is JSON, and the schema states what the parsers refuse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from planboard.api.errors import server_error


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


@pytest.mark.parametrize(
    "path",
    ["/api/sessions/1/files/a%0Ab", "/api/x%0A", "/api/sessions/1/tool-calls/a%0Ab/nope/"],
)
def test_an_address_with_a_newline_is_a_json_404(db: Any, path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_found"


def test_a_server_error_under_api_is_json(rf: Any) -> None:
    response = server_error(rf.get("/api/plans/"))
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert json.loads(response.content)["code"] == "server_error"
    assert server_error(rf.get("/sessions/"))["Content-Type"].startswith("text/html")


def test_request_bodies_refuse_unknown_fields_and_say_which_rule_applies(
    schema: dict[str, Any],
) -> None:
    parts = schema["components"]["schemas"]
    assert parts["PatchedPlanUpdate"]["additionalProperties"] is False
    assert {"required": ["state"]} in parts["PatchedPlanUpdate"]["anyOf"]
    assert parts["ForkRequest"]["oneOf"] == [
        {"required": ["version"]},
        {"required": ["subtask_id"]},
    ]
    # A body whose `{}` is refused is required.
    fork = schema["paths"]["/api/plans/{plan_id}/fork/"]["post"]["requestBody"]
    assert fork["required"] is True


def test_strings_that_may_not_be_blank_say_so(schema: dict[str, Any]) -> None:
    username = schema["components"]["schemas"]["TokenRequest"]["properties"]["username"]
    assert username["minLength"] == 1 and username["pattern"] == r"^[^\x00]*[^\x00\s][^\x00]*$"
    keys = schema["components"]["schemas"]["BulkApprove"]["properties"]["keys"]["items"]
    assert keys["minLength"] == 1


def test_blank_strings_are_refused_as_the_schema_says(user: Any) -> None:
    client = APIClient()
    client.force_authenticate(user)
    for body in ({"keys": [" "]}, {"keys": ["a\x00"]}):
        response = client.post("/api/inbox/bulk-approve/", body, format="json")
        assert response.status_code == 400 and "keys" in response.json()["fields"]
    response = client.post("/api/inbox/snooze/", {"key": "nothing-here"}, format="json")
    assert response.status_code == 404


def test_a_fork_names_exactly_one_starting_point(user: Any, plan: Any) -> None:
    client = APIClient()
    client.force_authenticate(user)
    for body in ({}, {"version": 1, "subtask_id": 1}):
        response = client.post(f"/api/plans/{plan.pk}/fork/", body, format="json")
        assert response.status_code == 400
        assert "Give either 'version' or 'subtask_id'" in response.json()["error"]


def test_money_is_rounded_to_its_places(user: Any, chat_session: Any) -> None:
    client = APIClient()
    client.force_authenticate(user)
    url = f"/api/sessions/{chat_session.pk}/"
    response = client.patch(url, {"budget_usd": 0.30000000000000004}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["budget_usd"] in ("0.3000", 0.3, "0.3")
    response = client.patch(url, {"budget_usd": 1e300}, format="json")
    assert response.status_code == 400 and "budget_usd" in response.json()["fields"]
