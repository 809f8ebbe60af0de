"""Property-based fuzzing of the REST API with schemathesis, driven by `/api/schema/`.

Every operation of the OpenAPI schema gets generated requests, sent in-process through
Django's WSGI handler as a signed-in user who owns a session and a plan: requests the schema
allows (positive) and, for operations that take input, requests it forbids (negative). Path
ids are half the time those of real objects, so the requests reach the services and not only
the 404 path. Every response passes all of schemathesis's checks: the schema is the contract,
so a status, content type or body it does not document fails, as does a request it allows
and validation refuses or the other way round. And after each request the plan invariants
hold (at most one subtask in progress, contiguous positions, versions equal to event counts,
the log replays to the snapshot); another user's data is never touched.

The examples are derandomized: every run replays the same ones. FUZZ_API_EXAMPLES (default
12 per operation, half as many negative ones) explores more. Every case runs all checks, some
of which send the request again (without credentials, for one): the default keeps the test
within a few minutes.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance
from schemathesis.core.parameters import ParameterLocation

from planboard import services
from planboard.models import Plan
from planboard.services import Actor
from tests.support.invariants import (
    assert_plan_invariants,
    assert_session_invariants,
    fingerprint,
)

EXAMPLES = int(os.environ.get("FUZZ_API_EXAMPLES", "12"))
_turns = itertools.count()


@pytest.fixture
def world(db: Any) -> dict[str, Any]:
    """Alice (the caller) with a session and a plan; Mallory with data Alice must not touch."""
    users = get_user_model().objects
    alice = users.create_user("fuzz-alice", password="pw-fuzz-alice-1")
    mallory = users.create_user("fuzz-mallory", password="pw-fuzz-mallory-1")
    session = services.session_create(owner=alice, title="Fuzzed")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=Actor.person(alice),
        name="Fuzzed plan",
        subtasks=[{"name": f"Step {i}"} for i in range(4)],
    )
    theirs = services.session_create(owner=mallory, title="Not Alice's")
    their_plan, _ = services.plan_create(
        session_id=theirs.pk, actor=Actor.person(mallory), name="Private", subtasks=[{"name": "x"}]
    )
    return {
        "alice": alice,
        "mallory": mallory,
        "token": Token.objects.create(user=alice).key,
        "session": session,
        "plan": plan,
        "their_session": theirs,
        "their_plan": their_plan,
        "mallory_before": fingerprint(mallory.pk),
    }


def real_ids(world: dict[str, Any]) -> dict[str, list[int]]:
    plan: Plan = world["plan"]
    return {
        "session_id": [world["session"].pk, world["their_session"].pk],
        "plan_id": [plan.pk, world["their_plan"].pk],
        "subtask_id": list(plan.subtasks.values_list("id", flat=True)) or [1],
    }


@pytest.fixture
def keep_test_connection() -> Any:
    """Django closes database connections when a request ends; the test's transaction lives
    on that connection. Its test client unhooks this for the same reason; do it for WSGI."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def api_operations(headers: dict[str, str]) -> list[Any]:
    from django.core.wsgi import get_wsgi_application

    # The schema is served to people signed in only.
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), headers=headers)
    return [result.ok() for result in schema.get_all_operations()]


def aim_at_real_objects(case: Any, world: dict[str, Any]) -> None:
    """Half the time point the path ids at objects that exist (mostly Alice's); never when
    the path is what a negative case breaks."""
    turn = next(_turns)
    if not case.path_parameters or turn % 2 or case.meta.is_negative_at(ParameterLocation.PATH):
        return
    choices = real_ids(world)
    for name in list(case.path_parameters):
        if name in choices:
            options = choices[name]
            case.path_parameters[name] = options[(turn // 2) % len(options)]


def takes_input(operation: Any) -> bool:
    """Whether a request can break the schema (negative cases exist for the operation)."""
    return any(len(part) for part in (operation.path_parameters, operation.query, operation.body))


def accepted_unless_a_rule_refuses(ctx: Any, response: Any, case: Any) -> bool | None:
    """positive_data_acceptance for writes. Every write goes through `planboard.services`,
    whose rules depend on what is stored (a finished plan, a profile or team that does not
    exist, a tool call decided already) and refuse with 400 and no `fields`; no schema can
    state them. A 400 that names `fields` is the parser refusing what the schema allows:
    that still fails, as does any other status positive_data_acceptance refuses."""
    if response.status_code == 400:
        body = response.json()
        if "fields" not in body and body.get("code") != "parse_error":
            return None
    return positive_data_acceptance(ctx, response, case)


WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# Checks that are wrong for an operation, and why.
EXCLUDED_CHECKS: dict[str, list[Any]] = {
    # Which username and password pairs are right is no schema's business: a wrong pair is
    # a 400 like every refused input (DRF's token exchange answers so, and clients expect it).
    "POST /api/auth/token/": [positive_data_acceptance],
}


def checks_for(label: str) -> tuple[list[Any], list[Any]]:
    """(checks to leave out, checks to add) for an operation."""
    excluded = list(EXCLUDED_CHECKS.get(label, []))
    if label.split()[0] in WRITES and positive_data_acceptance not in excluded:
        return [*excluded, positive_data_acceptance], [accepted_unless_a_rule_refuses]
    return excluded, []


# schemathesis's pytest plugin does not run under pytest 9 (it reads a removed private
# attribute), so each operation is driven through its hypothesis strategies directly.
@pytest.mark.slow
def test_api_keeps_its_schema_and_the_invariants(
    world: dict[str, Any], keep_test_connection: None
) -> None:
    headers = {"Authorization": f"Token {world['token']}"}
    operations = api_operations(headers)
    assert len(operations) >= 10, "the schema lists too few operations"
    tried: list[str] = []

    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        modes = [(GenerationMode.POSITIVE, EXAMPLES)]
        if takes_input(operation):
            modes.append((GenerationMode.NEGATIVE, max(EXAMPLES // 2, 1)))
        for mode, examples in modes:

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=examples,
                derandomize=True,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            def exercise(case: Any) -> None:
                aim_at_real_objects(case, world)
                excluded, additional = checks_for(case.operation.label)
                response = case.call(headers=headers)
                # DELETE /api/auth/token/ revokes the very token the fuzzer uses: put it back.
                Token.objects.get_or_create(key=world["token"], defaults={"user": world["alice"]})
                case.validate_response(
                    response,
                    headers=headers,
                    excluded_checks=excluded,
                    additional_checks=additional,
                )
                assert_session_invariants(world["session"].pk)
                for plan_id in Plan.objects.filter(owner=world["alice"]).values_list(
                    "id", flat=True
                ):
                    assert_plan_invariants(plan_id)
                assert fingerprint(world["mallory"].pk) == world["mallory_before"], (
                    f"{case.method} {case.formatted_path} changed Mallory's data"
                )

            exercise()
        tried.append(label)
    # The write operations were among those fuzzed.
    assert {"PATCH /api/plans/{plan_id}/subtasks/{subtask_id}/", "POST /api/sessions/"} <= set(
        tried
    )
