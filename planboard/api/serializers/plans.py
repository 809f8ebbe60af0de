"""Plans and subtasks: the changes people send, the snapshots and events they get back."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from planboard.api.serializers.base import (
    NUMBER_MAX,
    ErrorSerializer,
    InputSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    UserRefSerializer,
    name_field,
    text_field,
    version_field,
)
from planboard.models import SUBTASKS_HARD_LIMIT, State


class PlanUpdateSerializer(InputSerializer):
    needs_one_of = ("name", "description", "expected_outcome", "state")
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    state = StrictChoiceField(
        choices=State.choices,
        required=False,
        # Which states may finish a plan is the service's rule, not the parser's.
        help_text="`done` or `abandoned` finishes the plan (needs `outcome`).",
    )
    outcome = text_field()
    expected_version = version_field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if "outcome" in attrs and "state" not in attrs:
            raise serializers.ValidationError(
                {"outcome": ["An outcome is given when finishing the plan: add `state`."]}
            )
        return attrs


def blocked_by_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=2**63 - 1),
        required=False,
        max_length=SUBTASKS_HARD_LIMIT,
        help_text=help_text,
    )


class SubtaskCreateSerializer(InputSerializer):
    name = name_field(required=True)
    description = text_field()
    expected_outcome = text_field()
    index = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=-NUMBER_MAX,
        max_value=NUMBER_MAX,
        help_text="0-based position to insert before; appended when left out.",
    )
    agent = StrictCharField(max_length=50, required=False, allow_blank=True)
    blocked_by = blocked_by_field(
        "Ids of subtasks of this plan that must be done or abandoned before this one starts."
    )
    expected_version = version_field()


class SubtaskUpdateSerializer(InputSerializer):
    needs_one_of = (
        "name",
        "description",
        "expected_outcome",
        "outcome",
        "agent",
        "blocked_by",
        "state",
        "index",
    )
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    outcome = text_field()
    agent = StrictCharField(
        max_length=50,
        required=False,
        allow_blank=True,
        help_text="The agent profile that does this subtask; empty for the session's.",
    )
    blocked_by = blocked_by_field(
        "Ids of subtasks of this plan that must be done or abandoned before this one starts "
        "(replaces the list; [] for none). Cycles and the subtask itself are refused."
    )
    state = StrictChoiceField(choices=State.choices, required=False)
    index = StrictIntegerField(
        required=False,
        min_value=-NUMBER_MAX,
        max_value=NUMBER_MAX,
        help_text="Move the subtask to this 0-based position.",
    )
    expected_version = version_field()


class VersionQuerySerializer(serializers.Serializer):
    expected_version = serializers.IntegerField(required=False, min_value=0, max_value=NUMBER_MAX)


class EventsQuerySerializer(serializers.Serializer):
    since = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=NUMBER_MAX,
        help_text="Only events after this plan version.",
    )
    limit = serializers.IntegerField(required=False, default=500, min_value=1, max_value=1000)


class SubtaskSnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    outcome = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    agent = serializers.CharField(
        allow_null=True, help_text="The agent profile that does this subtask (null: default)."
    )
    blocked_by = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Ids of the subtasks of this plan it waits for, in board order ([]: none).",
    )
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class PlanSnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField(allow_null=True)
    owner = UserRefSerializer()
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    outcome = serializers.CharField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    subtasks = SubtaskSnapshotSerializer(many=True)


class SubtaskCountsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    todo = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    done = serializers.IntegerField()
    abandoned = serializers.IntegerField()


class PlanListItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    owner = UserRefSerializer()
    session_id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    subtask_counts = SubtaskCountsSerializer()


class ActorSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["user", "agent", "system"])
    user_id = serializers.IntegerField(allow_null=True)
    username = serializers.CharField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)


class EventSeenSerializer(serializers.Serializer):
    at = serializers.DateTimeField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)
    step = serializers.IntegerField(allow_null=True)
    after_steps = serializers.IntegerField(allow_null=True)


class PlanEventSerializer(serializers.Serializer):
    type = serializers.CharField(help_text='Always "plan.event", as on the websockets.')
    plan_id = serializers.IntegerField()
    session_id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField()
    action = serializers.CharField()
    actor = ActorSerializer()
    subtask_id = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    patch = serializers.JSONField(help_text="Applied to the snapshot at version-1.")
    created_at = serializers.DateTimeField(allow_null=True)
    seen = EventSeenSerializer(
        allow_null=True, help_text="When the agent was first shown this change (people's edits)."
    )


class PlanWriteResultSerializer(serializers.Serializer):
    plan = PlanSnapshotSerializer()


class SubtaskCreatedSerializer(PlanWriteResultSerializer):
    subtask_id = serializers.IntegerField()


class SubtaskDeletedSerializer(PlanWriteResultSerializer):
    deleted = SubtaskSnapshotSerializer()


class EventsPageSerializer(serializers.Serializer):
    results = PlanEventSerializer(many=True)
    has_more = serializers.BooleanField()


class StaleVersionSerializer(ErrorSerializer):
    snapshot = PlanSnapshotSerializer(help_text="The plan as it is now.")
