"""Property-based fuzzing of the ten plan tools' arguments (hypothesis).

Whatever a model sends — wrong types, bad JSON, huge or negative numbers, unknown tools or
arguments, control characters — `execute_tool_call` must return text, never raise; a result
starting with `Error: ` must have changed nothing; and after every call the plan invariants
hold (tests/test_fuzz_invariants.py).
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.tools import TOOL_NAMES, TOOL_SCHEMAS, execute_tool_call
from planboard import services
from planboard.models import ChatSession, Plan
from planboard.services import Actor
from tests.support.invariants import assert_session_invariants, fingerprint

_usernames = itertools.count(1)
# CI replays the same examples every time (a red build is reproducible, never a dice roll);
# local runs explore new ones.
IN_CI = bool(os.environ.get("CI"))
# More examples for a deeper local hunt: FUZZ_TOOLS_EXAMPLES=1000.


# Text a model might send, including the awkward: empty, blank, control characters, NUL,
# right-to-left marks, HTML, and strings over the length limits.
awkward_texts = st.sampled_from(
    ["", "   ", "\x00", "a\x00b", "<script>alert(1)</script>", "\u202e", "x" * 4001]
)
texts = st.one_of(st.text(max_size=30), awkward_texts, st.sampled_from(["Book", "Pack", "Go"]))
big_numbers = st.sampled_from([-(2**63) - 1, -(2**63), 2**31, 2**63, 2**64, 10**30])
indices = st.one_of(st.integers(-2, 8), st.integers(-2, 8), big_numbers)
states = st.sampled_from(["todo", "in_progress", "done", "abandoned", "DONE", "", "started"])
subtask_objects = st.fixed_dictionaries(
    {"name": texts},
    optional={
        "description": texts,
        "expected_outcome": texts,
        "state": states,  # ignored by the tools: subtasks always start todo
        "outcome": texts,
    },
)
subtask_lists = st.lists(subtask_objects, max_size=6)

# Arguments of the right JSON type (the calls reach the services), with awkward values.
typed: dict[str, st.SearchStrategy[Any]] = {
    "name": texts,
    "description": texts,
    "expected_outcome": texts,
    "subtasks": st.one_of(subtask_lists, subtask_lists, subtask_lists.map(json.dumps)),
    "subtask_idx": indices,
    "action": st.sampled_from(["add", "revise", "delete", "remove"]),
    "subtask": st.one_of(subtask_objects, subtask_objects, subtask_objects.map(json.dumps)),
    "state": states,
    "subtask_outcome": texts,
    "outcome": texts,
    "plan_id": st.one_of(st.integers(-1, 60), big_numbers),
}
typed_view_indices = st.lists(indices, max_size=4)

# Anything at all, for the arguments' shapes and types.
junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        big_numbers,
        st.floats(allow_nan=True, allow_infinity=True),
        texts,
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
schemas = {s["function"]["name"]: s["function"]["parameters"] for s in TOOL_SCHEMAS}
tool_names = st.sampled_from(sorted(TOOL_NAMES))


@st.composite
def typed_calls(draw: st.DrawFn) -> tuple[str, str]:
    """A known tool with its required arguments (and some optional ones), right types."""
    name = draw(tool_names)
    schema = schemas[name]
    optional = sorted(set(schema["properties"]) - set(schema["required"]))
    extra = draw(st.lists(st.sampled_from(optional), unique=True)) if optional else []
    args = {}
    for key in [*schema["required"], *extra]:
        is_list = key == "subtask_idx" and name == "view_subtasks"
        args[key] = draw(typed_view_indices if is_list else typed[key])
    return name, json.dumps(args)


@st.composite
def junk_calls(draw: st.DrawFn) -> tuple[str, Any]:
    """Wrong names, missing or unknown arguments, wrong types, text that is not JSON."""
    name = draw(st.one_of(tool_names, st.text(max_size=12)))
    properties = sorted(schemas.get(name, {"properties": {}})["properties"])
    keys = draw(st.lists(st.sampled_from(properties), unique=True)) if properties else []
    args: dict[str, Any] = {key: draw(junk) for key in keys}
    if draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=8))] = draw(junk)
    return name, draw(
        st.one_of(
            st.just(json.dumps(args, allow_nan=True)),
            st.just(args),  # a dict instead of a JSON string
            st.none(),
            st.text(max_size=30),
            st.sampled_from(["{", "[]", "null", "1", '"x"', "{}"]),
        )
    )


def valid_plan(count: int) -> tuple[str, str]:
    subtasks = [
        {"name": f"Step {i}", "description": f"Do {i}", "expected_outcome": f"Result {i}"}
        for i in range(count)
    ]
    arguments = {
        "name": "Fuzzed plan",
        "description": "Made to have something to break",
        "expected_outcome": "Nothing broken",
        "subtasks": subtasks,
    }
    return "create_plan", json.dumps(arguments)


@pytest.mark.django_db
@settings(
    max_examples=int(os.environ.get("FUZZ_TOOLS_EXAMPLES", "100")),
    derandomize=IN_CI,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start_with_plan=st.integers(min_value=-1, max_value=5),
    max_subtasks=st.one_of(st.none(), st.integers(1, 6)),
    calls=st.lists(st.one_of(typed_calls(), typed_calls(), junk_calls()), min_size=1, max_size=10),
)
def test_tool_calls_never_crash_and_keep_invariants(
    start_with_plan: int, max_subtasks: int | None, calls: list[tuple[str, Any]]
) -> None:
    owner = get_user_model().objects.create_user(f"fuzz-{next(_usernames)}")
    session = services.session_create(owner=owner, max_subtasks=max_subtasks)
    _, run = services.message_post(session_id=session.pk, author=owner, content="Plan it.")
    actor = Actor.agent(run)
    if start_with_plan >= 0:
        calls = [valid_plan(start_with_plan), *calls]

    for name, arguments in calls:
        before = fingerprint(owner.pk)
        result = execute_tool_call(
            session_id=session.pk, actor=actor, name=name, arguments=arguments
        )
        assert isinstance(result, str) and result.strip(), f"{name} returned {result!r}"
        if result.startswith("Error: "):
            assert fingerprint(owner.pk) == before, f"failed {name} changed the plan: {result}"
        assert_session_invariants(session.pk)


@pytest.mark.django_db
def test_other_owners_plans_cannot_be_recovered(user: Any, other_user: Any) -> None:
    """recover_historical_plan is limited to the owner's own plans, whatever id is sent."""
    theirs = services.session_create(owner=other_user)
    plan, _ = services.plan_create(
        session_id=theirs.pk, actor=Actor.person(other_user), name="Secret", subtasks=[]
    )
    services.plan_finish(plan_id=plan.pk, actor=Actor.person(other_user), state="done", outcome="x")
    mine = services.session_create(owner=user)
    before = fingerprint(user.pk), fingerprint(other_user.pk)
    result = execute_tool_call(
        session_id=mine.pk,
        actor=Actor.person(user),
        name="recover_historical_plan",
        arguments=json.dumps({"plan_id": plan.pk}),
    )
    assert result.startswith("Error: ")
    assert "Secret" not in result
    assert (fingerprint(user.pk), fingerprint(other_user.pk)) == before
    assert ChatSession.objects.get(pk=mine.pk).current_plan_id is None
    assert Plan.objects.get(pk=plan.pk).state == "done"
