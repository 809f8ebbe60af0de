"""Templates keep subtask dependencies: saved from a plan (ids become positions), edited
(positions checked: in range, never the subtask itself, no circle), started (positions become
the new plan's ids), through the services, REST and the Templates page's form."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import Plan, PlanTemplate
from planboard.services import Actor
from tests.support.templates import form_data
from tests.support.web import client_for

pytestmark = pytest.mark.django_db

THREE = [{"name": "A"}, {"name": "B", "blocked_by": [0]}, {"name": "C", "blocked_by": [0, 1]}]


def _waits(plan_id: int) -> list[list[int]]:
    """Each subtask's blockers as positions in the plan, to compare plans with new ids."""
    subtasks = selectors.plan_snapshot(plan_id=plan_id)["subtasks"]
    position = {s["id"]: s["index"] for s in subtasks}
    return [[position[pk] for pk in s["blocked_by"]] for s in subtasks]


def test_saved_from_a_plan_the_ids_become_positions_and_start_gives_new_ids(
    user: Any, plan: Plan, actor: Actor
) -> None:
    first, second, third = (s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"])
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=third, blocked_by=[first])
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=second, blocked_by=[third])

    template = services.template_create_from_plan(user=user, plan_id=plan.pk)
    shown = selectors.template_snapshot(template)
    assert [s["blocked_by"] for s in shown["subtasks"]] == [[], [2], [0]]

    started = services.session_start_from_template(template_id=template.pk, user=user)
    new = selectors.plan_snapshot(plan_id=started.plan.pk)["subtasks"]
    assert not {s["id"] for s in new} & {first, second, third}
    assert [s["blocked_by"] for s in new] == [[], [new[2]["id"]], [new[0]["id"]]]
    assert _waits(started.plan.pk) == _waits(plan.pk)
    # The creation event carries them, so the history replays them.
    replayed = selectors.plan_snapshot_at(plan_id=started.plan.pk, version=1)
    assert replayed is not None and [s["blocked_by"] for s in replayed["subtasks"]] == [
        s["blocked_by"] for s in new
    ]


def test_edit_sets_and_clears_dependencies(user: Any) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=THREE)
    assert [s["blocked_by"] for s in template.subtasks] == [[], [0], [0, 1]]
    services.template_update(
        template_id=template.pk,
        user=user,
        subtasks=[{"name": "A", "blocked_by": [1, 1]}, {"name": "B"}],
    )
    template.refresh_from_db()
    assert [s["blocked_by"] for s in template.subtasks] == [[1], []]


@pytest.mark.parametrize(
    ("blocked", "fragment"),
    [
        ([[], [1], []], "cannot wait for itself"),
        ([[], [3], []], "the plan has 3 subtasks"),
        ([[2], [0], [1]], "make a circle"),
        ([[], [-1], []], "whole numbers of at least 0"),
        ([[], [True], []], "whole numbers of at least 0"),
        ([[], "0", []], "must be a list of whole numbers"),
    ],
)
def test_bad_positions_are_refused_and_nothing_is_lost(
    user: Any, blocked: list[Any], fragment: str
) -> None:
    kept = services.template_create(user=user, name="Kept", subtasks=THREE)
    before = kept.subtasks
    bad = [{"name": n, "blocked_by": b} for n, b in zip("ABC", blocked, strict=True)]
    with pytest.raises(PlanError) as refused:
        services.template_update(template_id=kept.pk, user=user, subtasks=bad)
    assert fragment in refused.value.message
    with pytest.raises(PlanError):
        services.template_create(user=user, name="New", subtasks=bad)
    kept.refresh_from_db()
    assert kept.subtasks == before
    assert PlanTemplate.objects.count() == 1


def test_a_row_changed_outside_the_services_fails_clearly_at_start(user: Any) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=THREE)
    # A circle written straight into the row (a data migration, the database shell).
    PlanTemplate.objects.filter(pk=template.pk).update(
        subtasks=[{"name": "A", "blocked_by": [1]}, {"name": "B", "blocked_by": [0]}]
    )
    with pytest.raises(PlanError, match="make a circle"):
        services.session_start_from_template(template_id=template.pk, user=user)
    # A row saved before dependencies has no key and starts as it always did.
    PlanTemplate.objects.filter(pk=template.pk).update(subtasks=[{"name": "A"}, {"name": "B"}])
    started = services.session_start_from_template(template_id=template.pk, user=user)
    assert _waits(started.plan.pk) == [[], []]


def test_api_round_trip_and_bad_positions(api: APIClient) -> None:
    made = api.post("/api/templates/", {"name": "Trip", "subtasks": THREE}, format="json")
    assert made.status_code == 201, made.json()
    assert [s["blocked_by"] for s in made.json()["subtasks"]] == [[], [0], [0, 1]]
    started = api.post(f"/api/templates/{made.json()['id']}/start/", {}, format="json")
    assert started.status_code == 201, started.json()
    _, b, c = started.json()["plan"]["subtasks"]
    ids = [s["id"] for s in started.json()["plan"]["subtasks"]]
    assert (b["blocked_by"], c["blocked_by"]) == ([ids[0]], ids[:2])

    for bad, fragment in (
        ([{"name": "A", "blocked_by": [0]}], "cannot wait for itself"),
        ([{"name": "A", "blocked_by": ["0"]}], "blocked_by"),
        ([{"name": "A", "blocked_by": [5]}], "has 1 subtasks"),
    ):
        url = f"/api/templates/{made.json()['id']}/"
        refused = api.patch(url, {"subtasks": bad}, format="json")
        assert refused.status_code == 400 and fragment in refused.content.decode(), refused.json()
    again = api.get(f"/api/templates/{made.json()['id']}/").json()
    assert [s["blocked_by"] for s in again["subtasks"]] == [[], [0], [0, 1]]

    schema = api.get("/api/schema/", {"format": "json"}).json()
    parts = schema["components"]["schemas"]
    assert "blocked_by" in parts["TemplateSubtask"]["properties"]
    assert "blocked_by" in parts["TemplateSubtaskInput"]["properties"]


def test_the_page_shows_waits_for_and_follows_moves_and_removals(user: Any) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=THREE)
    client = client_for(user)
    page = client.get(f"/templates/{template.pk}/").content.decode()
    assert 'name="subtasks-2-waits_for" value="1, 2"' in page
    # C moves first and waits for "#3" (A's position number now); B is removed.
    rows = [
        {"name": "A", "ORDER": 3, "waits_for": ""},
        {"name": "B", "ORDER": 2, "waits_for": "3", "DELETE": "on"},
        {"name": "C", "ORDER": 1, "waits_for": "#3, 2"},
    ]
    saved = client.post(f"/templates/{template.pk}/", form_data(template, rows))
    assert saved.status_code == 302, saved.content.decode()[:2000]
    template.refresh_from_db()
    assert [(s["name"], s["blocked_by"]) for s in template.subtasks] == [("C", [1]), ("A", [])]


@pytest.mark.parametrize(
    ("waits", "fragment"),
    [
        ("first", "Give subtask numbers"),
        ("0", "Give subtask numbers"),
        ("7", "no single subtask has"),
        ("2", "cannot wait for itself"),
        ("1", "make a circle"),
    ],
)
def test_the_page_refuses_bad_waits_for_and_keeps_the_template(
    user: Any, waits: str, fragment: str
) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=THREE[:2])
    rows = [
        {"name": "A", "ORDER": 1, "waits_for": "2" if waits == "1" else ""},
        {"name": "B", "ORDER": 2, "waits_for": waits},
    ]
    page = client_for(user).post(f"/templates/{template.pk}/", form_data(template, rows))
    assert page.status_code == 400 and fragment in page.content.decode()
    template.refresh_from_db()
    assert [s["blocked_by"] for s in template.subtasks] == [[], [0]]


def test_the_page_names_rows_by_the_numbers_people_see(user: Any) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=THREE[:2])
    client = client_for(user)
    itself = [
        {"name": "A", "ORDER": 1, "waits_for": ""},
        {"name": "B", "ORDER": 2, "waits_for": "2"},
    ]
    page = client.post(f"/templates/{template.pk}/", form_data(template, itself)).content.decode()
    assert "“B” (#2) cannot wait for itself." in page
    assert "Subtask 1" not in page and "subtasks[1]" not in page
    circle = [
        {"name": "A", "ORDER": 1, "waits_for": "2"},
        {"name": "B", "ORDER": 2, "waits_for": "1"},
    ]
    page = client.post(f"/templates/{template.pk}/", form_data(template, circle)).content.decode()
    assert "“A” (#1) → “B” (#2) waits for the first again" in page
    assert "subtask 0" not in page
