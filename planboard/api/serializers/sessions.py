"""Chat sessions: creating and changing one, and the session as listed and as opened (with its
plan, runs, pending decisions and files)."""

from __future__ import annotations

from rest_framework import serializers

from planboard.api.serializers.base import (
    NUMBER_MAX,
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    UserRefSerializer,
    money_field,
    profile_name_field,
    tokens_field,
)
from planboard.api.serializers.files import WorkspaceFileSerializer
from planboard.api.serializers.messages import RunSerializer
from planboard.api.serializers.plans import PlanSnapshotSerializer
from planboard.api.serializers.tool_calls import ElicitationSerializer, ToolCallSerializer
from planboard.models import NAME_MAX, SUBTASKS_HARD_LIMIT, ChatSession


class SessionCreateSerializer(InputSerializer):
    title = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True, default="")
    need_user_confirm = StrictBooleanField(required=False, default=True)
    max_subtasks = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=SUBTASKS_HARD_LIMIT
    )
    language = StrictChoiceField(
        choices=ChatSession.Language.choices, required=False, default=ChatSession.Language.AUTO
    )
    plan_mode = StrictBooleanField(required=False, default=True)
    profile = profile_name_field()
    budget_usd = money_field()
    budget_tokens = tokens_field()


class SessionUpdateSerializer(InputSerializer):
    needs_one_of = "__all__"
    title = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    need_user_confirm = StrictBooleanField(required=False)
    max_subtasks = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=SUBTASKS_HARD_LIMIT
    )
    language = StrictChoiceField(choices=ChatSession.Language.choices, required=False)
    plan_mode = StrictBooleanField(required=False)
    profile = profile_name_field()
    budget_usd = money_field()
    budget_tokens = tokens_field()
    toolsets = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=NUMBER_MAX),
        required=False,
        max_length=50,
        help_text="Ids of the toolsets the agent may use in this session (replaces the list).",
    )


class SessionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    owner = UserRefSerializer()
    title = serializers.CharField()
    need_user_confirm = serializers.BooleanField()
    max_subtasks = serializers.IntegerField(allow_null=True)
    language = serializers.ChoiceField(choices=ChatSession.Language.choices)
    plan_mode = serializers.BooleanField()
    profile = serializers.CharField(allow_null=True)
    budget_usd = serializers.FloatField(allow_null=True)
    budget_tokens = serializers.IntegerField(allow_null=True)
    spent_usd = serializers.FloatField()
    spent_tokens = serializers.IntegerField()
    current_plan_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class SessionListItemSerializer(SessionSerializer):
    latest_run = RunSerializer(allow_null=True)


class SessionSnapshotSerializer(SessionSerializer):
    current_plan = PlanSnapshotSerializer(allow_null=True)
    latest_run = RunSerializer(allow_null=True)
    toolsets = serializers.ListField(
        child=serializers.IntegerField(), help_text="Toolsets the agent may use here."
    )
    pending_tool_calls = ToolCallSerializer(
        many=True, help_text="Tool calls waiting for a person's decision."
    )
    calls_in_flight = ToolCallSerializer(
        many=True,
        help_text="Tool calls its servers are working on: running (with their task's status), "
        "or waiting on their server's questions.",
    )
    pending_elicitations = ElicitationSerializer(
        many=True, help_text="Questions the tools' servers ask, waiting for an answer."
    )
    files = WorkspaceFileSerializer(many=True, help_text="Files the agent wrote here.")
