"""The OpenAPI document's response serializers describe exactly the shapes the code sends.

`planboard/shapes.py` is the one source of the snapshot and event shapes; the documentation
serializers in `planboard/api/serializers/` must list the same keys, with null allowed exactly
where the shape says `| None` (the schema once lacked a subtask's `agent`)."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from rest_framework import serializers

from planboard import shapes
from planboard.api import serializers as s
from planboard.api.serializers import templates as ts

PAIRS: list[tuple[type[serializers.Serializer], Any]] = [
    (s.UserRefSerializer, shapes.OwnerRef),
    (s.SubtaskSnapshotSerializer, shapes.SubtaskSnapshot),
    (s.PlanSnapshotSerializer, shapes.PlanSnapshot),
    (s.ActorSerializer, shapes.EventActor),
    (s.EventSeenSerializer, shapes.EventSeen),
    (s.PlanEventSerializer, shapes.PlanEventData),
    (ts.TemplateSubtaskSerializer, shapes.TemplateSubtask),
    (ts.TeamRefSerializer, shapes.TeamRef),
]


def _nullable(hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return type(None) in typing.get_args(hint)
    return False


@pytest.mark.parametrize(("serializer", "shape"), PAIRS, ids=lambda v: v.__name__)
def test_documented_fields_match_the_shape(
    serializer: type[serializers.Serializer], shape: Any
) -> None:
    hints = typing.get_type_hints(shape)
    fields = serializer().fields
    assert sorted(fields) == sorted(hints)
    for name, field in fields.items():
        assert field.allow_null == _nullable(hints[name]), name
