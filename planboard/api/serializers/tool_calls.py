"""Calls of external tools (listing them, a person's decision) and the questions their servers
ask people (elicitations)."""

from __future__ import annotations

from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
)
from planboard.api.serializers.messages import RunSerializer
from planboard.models import TEXT_MAX, Channel, Elicitation, ToolCall


class ToolCallSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True)
    tool_call_id = serializers.CharField()
    tool_name = serializers.CharField(help_text="As the model named it: <toolset>__<tool>.")
    toolset_id = serializers.IntegerField(allow_null=True)
    tool = serializers.CharField()
    arguments = serializers.JSONField()
    # A field named like a Field attribute: DRF's metaclass takes declared fields off the class.
    read_only = serializers.BooleanField()  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=ToolCall.Status.choices)
    note = serializers.CharField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decided_via = serializers.ChoiceField(
        choices=Channel.choices,
        allow_null=True,
        help_text="Through which channel the decision came: browser, api, email, webhook, "
        "expiry (an action link expired: denied) or admin.",
    )
    always_allow = serializers.BooleanField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    task_id = serializers.CharField(
        allow_null=True, help_text="The MCP task the server runs the call as, if it does."
    )
    task_status = serializers.CharField(
        allow_null=True,
        help_text="What the server last said of the task: working, input_required, completed, "
        "failed or cancelled.",
    )
    task_message = serializers.CharField(
        allow_null=True, help_text="The server's status message for the task (its progress)."
    )


class ToolCallsQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=ToolCall.Status.choices, required=False, help_text="Only calls in this status."
    )


class ToolCallsPageSerializer(serializers.Serializer):
    results = ToolCallSerializer(many=True)


class ToolCallDecisionSerializer(InputSerializer):
    decision = StrictChoiceField(choices=[("approve", "Approve"), ("deny", "Deny")])
    note = StrictCharField(max_length=TEXT_MAX, required=False, allow_blank=True, default="")
    always_allow = StrictBooleanField(
        required=False,
        default=False,
        help_text="With approve: later calls of this tool in this session run without asking.",
    )


class ToolCallDecidedSerializer(serializers.Serializer):
    tool_call = ToolCallSerializer()
    run = RunSerializer(allow_null=True)


class ElicitationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True)
    tool_call_id = serializers.CharField(allow_null=True, help_text="The call that asked.")
    tool_name = serializers.CharField(allow_null=True)
    toolset = serializers.CharField()
    mode = serializers.ChoiceField(
        choices=Elicitation.Mode.choices,
        help_text="form: fill in `requested_schema`; url: open `url` (nothing is sent back).",
    )
    message = serializers.CharField(help_text="The server's words (text, not markup).")
    requested_schema = serializers.JSONField(
        help_text="A flat object schema of primitive fields (MCP elicitation)."
    )
    url = serializers.CharField()
    status = serializers.ChoiceField(choices=Elicitation.Status.choices)
    content = serializers.JSONField(allow_null=True, help_text="What was accepted.")
    answered_by = serializers.CharField(allow_null=True)
    answered_via = serializers.CharField()
    answered_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Unanswered by then: the server is told 'decline'."
    )


class ElicitationsPageSerializer(serializers.Serializer):
    results = ElicitationSerializer(many=True)


class ElicitationsQuerySerializer(InputSerializer):
    status = StrictChoiceField(choices=Elicitation.Status.choices, required=False)


class ElicitationAnswerSerializer(InputSerializer):
    action = StrictChoiceField(
        choices=[("accept", "Accept"), ("decline", "Decline"), ("cancel", "Cancel")]
    )
    content = serializers.JSONField(
        required=False,
        default=None,
        help_text="With accept of a form: the field values, checked against its schema.",
    )


class ElicitationAnsweredSerializer(serializers.Serializer):
    elicitation = ElicitationSerializer()
