"""Plan templates in the admin: Django's model permissions decide, writes go through the
services, and a bad subtask list is shown on the form with nothing changed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planboard import services
from planboard.models import PlanTemplate
from tests.support.permissions import grant
from tests.support.web import client_for

pytestmark = pytest.mark.django_db

LIST = "/admin/planboard/plantemplate/"


def _form(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "Offsite",
        "description": "",
        "expected_outcome": "",
        "team": "",
        "subtasks": json.dumps([{"name": "Venue"}]),
    }
    data.update(overrides)
    return data


def test_model_permissions_decide(user: Any, staff: Any) -> None:
    template = services.template_create(user=user, name="Alice's")
    assert client_for(staff).get(LIST).status_code == 403
    viewer = grant(staff, "planboard.view_plantemplate")
    page = client_for(viewer).get(f"{LIST}{template.pk}/change/")
    assert page.status_code == 200 and b"Alice&#x27;s" in page.content
    refused = client_for(viewer).post(f"{LIST}{template.pk}/change/", _form(name="Taken"))
    assert refused.status_code == 403
    template.refresh_from_db()
    assert template.name == "Alice's"


def test_add_change_delete_through_the_services(staff_admin: Any, user: Any) -> None:
    client = client_for(staff_admin)
    added = client.post(f"{LIST}add/", _form())
    assert added.status_code == 302
    made = PlanTemplate.objects.get()
    assert made.owner_id == staff_admin.pk
    assert made.subtasks == [
        {"name": "Venue", "description": "", "expected_outcome": "", "agent": "", "blocked_by": []}
    ]
    theirs = services.template_create(user=user, name="Alice's")
    changed = client.post(f"{LIST}{theirs.pk}/change/", _form(name="Reviewed"))
    assert changed.status_code == 302
    theirs.refresh_from_db()
    assert (theirs.name, theirs.owner_id) == ("Reviewed", user.pk)
    deleted = client.post(f"{LIST}{theirs.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert list(PlanTemplate.objects.values_list("name", flat=True)) == ["Offsite"]


@pytest.mark.parametrize(
    ("subtasks", "message"),
    [
        (json.dumps([{"name": "a", "state": "done"}]), "unknown key(s) &#x27;state&#x27;"),
        (json.dumps({"name": "a"}), "must be a list"),
        (json.dumps([{"name": "a", "agent": "ghost"}]), "no agent profile named"),
    ],
)
def test_bad_subtasks_show_on_the_form(
    staff_admin: Any, user: Any, subtasks: str, message: str
) -> None:
    template = services.template_create(user=user, name="Kept", subtasks=[{"name": "Stay"}])
    page = client_for(staff_admin).post(
        f"{LIST}{template.pk}/change/", _form(name="Changed", subtasks=subtasks)
    )
    assert page.status_code == 200
    assert message in page.content.decode()
    template.refresh_from_db()
    assert (template.name, template.subtasks[0]["name"]) == ("Kept", "Stay")
