"""Shapes of `/api/schedules/` (docs/SCHEDULES.md)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
)
from planboard.models import MESSAGE_MAX, NAME_MAX, Schedule, ScheduleOccurrence
from planboard.services.schedules import FAILURES_MAX


class ScheduleOwnerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class ScheduleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    owner = ScheduleOwnerSerializer()
    session_id = serializers.IntegerField(
        allow_null=True, help_text="The session it posts into; null for a template schedule."
    )
    template_id = serializers.IntegerField(
        allow_null=True,
        help_text="The plan template each occurrence starts a new session from; null for a "
        "session schedule.",
    )
    name = serializers.CharField()
    message = serializers.CharField()
    kind = serializers.ChoiceField(choices=Schedule.Kind.choices)
    cron = serializers.CharField()
    every = serializers.IntegerField(allow_null=True)
    at_time = serializers.CharField(allow_null=True, help_text="HH:MM, local to `timezone`.")
    starts_on = serializers.DateField(allow_null=True)
    timezone = serializers.CharField(help_text="An IANA time zone, e.g. Europe/Berlin.")
    enabled = serializers.BooleanField()
    paused_reason = serializers.ChoiceField(choices=Schedule.Paused.choices)
    max_failures = serializers.IntegerField()
    failures_in_a_row = serializers.IntegerField()
    next_due_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class OccurrenceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    due_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=ScheduleOccurrence.Status.choices)
    run_id = serializers.IntegerField(allow_null=True)
    session_id = serializers.IntegerField(
        allow_null=True, help_text="The session its run worked in (none when no run started)."
    )
    message_id = serializers.IntegerField(allow_null=True)
    detail = serializers.CharField()
    created_at = serializers.DateTimeField()
    settled_at = serializers.DateTimeField(allow_null=True)


class RuleInputSerializer(InputSerializer):
    kind = StrictChoiceField(choices=Schedule.Kind.choices)
    timezone = StrictCharField(max_length=64, help_text="An IANA time zone, e.g. Europe/Berlin.")
    cron = StrictCharField(max_length=100, required=False, allow_blank=True)
    # Its range is the rule's (`planboard.schedules`): a field being typed (0, empty) is a
    # rule not valid yet, which the preview answers with its error.
    every = StrictIntegerField(
        required=False, allow_null=True, help_text="1 to 366 days, or 1 to 168 hours."
    )
    at_time = serializers.TimeField(required=False, allow_null=True, help_text="HH:MM")
    starts_on = serializers.DateField(required=False, allow_null=True)


class PreviewSerializer(serializers.Serializer):
    occurrences = serializers.ListField(
        child=serializers.DateTimeField(), help_text="Empty when the rule is not valid."
    )
    error = serializers.CharField(
        allow_null=True,
        help_text="Why the rule is not valid (a half-typed cron expression, an unknown time "
        "zone), or null. The preview answers 200 either way; saving such a rule is a 400.",
    )
    code = serializers.CharField(allow_null=True, help_text="The error's code, or null.")


class ScheduleCreateSerializer(RuleInputSerializer):
    session_id = StrictIntegerField(
        min_value=1, required=False, help_text="Post into this session of yours; or template_id."
    )
    template_id = StrictIntegerField(
        min_value=1,
        required=False,
        help_text="Start a new session from this plan template at each occurrence; or session_id.",
    )
    message = StrictCharField(max_length=MESSAGE_MAX // 2, trim_whitespace=False)
    name = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    max_failures = StrictIntegerField(min_value=1, max_value=FAILURES_MAX, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("session_id" in attrs) == ("template_id" in attrs):
            raise serializers.ValidationError(
                "Give exactly one target: session_id (post into that session) or template_id "
                "(start a new session from that template at each occurrence)."
            )
        return super().validate(attrs)

    def schema_rules(self) -> dict[str, Any]:
        return {"oneOf": [{"required": ["session_id"]}, {"required": ["template_id"]}]}


class ScheduleUpdateSerializer(InputSerializer):
    needs_one_of = "__all__"
    message = StrictCharField(max_length=MESSAGE_MAX // 2, required=False, trim_whitespace=False)
    name = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    max_failures = StrictIntegerField(min_value=1, max_value=FAILURES_MAX, required=False)
    kind = StrictChoiceField(choices=Schedule.Kind.choices, required=False)
    timezone = StrictCharField(max_length=64, required=False)
    cron = StrictCharField(max_length=100, required=False, allow_blank=True)
    every = StrictIntegerField(min_value=1, max_value=366, required=False, allow_null=True)
    at_time = serializers.TimeField(required=False, allow_null=True)
    starts_on = serializers.DateField(required=False, allow_null=True)
