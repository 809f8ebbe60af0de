"""Shapes of "continue from here": where to fork a plan's history, and the session it made."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from planboard.api.serializers.base import (
    NUMBER_MAX,
    InputSerializer,
    StrictCharField,
    StrictIntegerField,
)
from planboard.api.serializers.plans import PlanSnapshotSerializer
from planboard.models import NAME_MAX


class ForkRequestSerializer(InputSerializer):
    version = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=NUMBER_MAX,
        help_text="Continue from the plan as it stood at this version of its history.",
    )
    subtask_id = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=NUMBER_MAX,
        help_text="Or: continue from the version that finished this subtask (its stable id).",
    )
    title = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=NAME_MAX,
        help_text="The new session's title (default: the source's, \"(continued)\").",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("version" in attrs) == ("subtask_id" in attrs):
            raise serializers.ValidationError(
                "Give either 'version' or 'subtask_id' to say where to continue from."
            )
        return attrs

    def schema_rules(self) -> dict[str, Any]:
        return {"oneOf": [{"required": ["version"]}, {"required": ["subtask_id"]}]}


class ForkResultSerializer(serializers.Serializer):
    session_id = serializers.IntegerField()
    url = serializers.CharField(help_text="The new session's page.")
    version = serializers.IntegerField(help_text="The source version it continues from.")
    plan = PlanSnapshotSerializer(help_text="The new session's plan (version 1).")
