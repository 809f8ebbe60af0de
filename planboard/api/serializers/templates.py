"""Input and response shapes of `/api/templates/` (the schema documents them; the services
check every rule). A template subtask is text, a profile and what it waits for (positions):
sending a state, an outcome or an id is refused as an unknown field."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from planboard.api.serializers.base import (
    NUMBER_MAX,
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    UserRefSerializer,
    name_field,
    profile_name_field,
    text_field,
)
from planboard.api.serializers.plans import PlanSnapshotSerializer
from planboard.api.serializers.sessions import SessionSnapshotSerializer
from planboard.models import NAME_MAX, SUBTASKS_HARD_LIMIT, ChatSession


def _positions_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictIntegerField(min_value=0, max_value=SUBTASKS_HARD_LIMIT - 1),
        required=False,
        max_length=SUBTASKS_HARD_LIMIT,
        help_text=help_text,
    )


class TemplateSubtaskInputSerializer(InputSerializer):
    name = name_field(required=True)
    description = text_field()
    expected_outcome = text_field()
    agent = profile_name_field()
    blocked_by = _positions_field(
        "0-based positions, in this list, of the subtasks this one waits for; a plan started "
        "from the template gets them as its subtasks' ids. Itself, a position past the end "
        "and circles are refused."
    )


def _subtasks_field() -> serializers.ListField:
    return serializers.ListField(
        child=TemplateSubtaskInputSerializer(),
        max_length=SUBTASKS_HARD_LIMIT,
        required=False,
        help_text="The whole list, in order; replaces the template's subtasks.",
    )


def _team_field() -> StrictIntegerField:
    return StrictIntegerField(
        min_value=1,
        max_value=NUMBER_MAX,
        required=False,
        allow_null=True,
        help_text="Share with this team (one its owner belongs to); null: share with nobody.",
    )


# What a saved plan brings along itself.
PLAN_GIVES = ("description", "expected_outcome", "subtasks")


class TemplateCreateSerializer(InputSerializer):
    plan_id = StrictIntegerField(
        min_value=1,
        max_value=NUMBER_MAX,
        required=False,
        help_text="Save this plan (one you can read) as the template; the text fields and "
        "subtasks then come from the plan, and `name`, if given, replaces its name.",
    )
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    subtasks = _subtasks_field()
    team_id = _team_field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "plan_id" in attrs:
            extra = sorted(set(PLAN_GIVES) & set(attrs))
            if extra:
                raise serializers.ValidationError(
                    f"With plan_id the plan gives {', '.join(extra)}; send only name and team_id."
                )
        elif "name" not in attrs:
            raise serializers.ValidationError(
                "Give a plan_id to save, or a name for a new template."
            )
        return attrs

    def schema_rules(self) -> dict[str, Any]:
        # A plan to save, without the text it brings; or a new template's name.
        from_plan = {
            "required": ["plan_id"],
            "not": {"anyOf": [{"required": [f]} for f in PLAN_GIVES]},
        }
        new = {"required": ["name"], "not": {"required": ["plan_id"]}}
        return {"anyOf": [from_plan, new]}


class TemplateUpdateSerializer(InputSerializer):
    needs_one_of = "__all__"
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    subtasks = _subtasks_field()
    team_id = _team_field()


class TemplateStartSerializer(InputSerializer):
    title = StrictCharField(
        max_length=NAME_MAX,
        required=False,
        allow_blank=True,
        help_text="The new session's title; empty: the template's name.",
    )
    need_user_confirm = StrictBooleanField(required=False, default=True)
    language = StrictChoiceField(
        choices=ChatSession.Language.choices, required=False, default=ChatSession.Language.AUTO
    )
    drop_unavailable_profiles = StrictBooleanField(
        required=False,
        default=False,
        help_text="Subtasks naming a profile you cannot use now do the session's profile "
        "instead (listed in `dropped_profiles`); without it such a template is refused (400, "
        "code `unavailable_profile`).",
    )


class TeamRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class TemplateSubtaskSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    agent = serializers.CharField(help_text="The agent profile's name; empty: the session's.")
    blocked_by = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="0-based positions, in this list, of the subtasks it waits for ([]: none).",
    )


class TemplateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    owner = UserRefSerializer()
    team = TeamRefSerializer(allow_null=True)
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    subtasks = TemplateSubtaskSerializer(many=True)
    source_plan_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    can_change = serializers.BooleanField(help_text="Whether you may edit it.")
    can_delete = serializers.BooleanField(help_text="Whether you may delete it.")


class DroppedProfileSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The subtask's 0-based position.")
    profile = serializers.CharField()


class TemplateStartedSerializer(serializers.Serializer):
    session = SessionSnapshotSerializer()
    plan = PlanSnapshotSerializer()
    dropped_profiles = DroppedProfileSerializer(many=True)
