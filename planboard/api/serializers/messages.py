"""Messages posted to a session, the transcript, and the runs a message starts."""

from __future__ import annotations

from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
)
from planboard.models import MESSAGE_MAX, AgentRun, Message


class ResourceRefSerializer(InputSerializer):
    toolset_id = StrictIntegerField(min_value=1, max_value=2**62)
    uri = StrictCharField(min_length=1, max_length=2000)


class MessageCreateSerializer(InputSerializer):
    content = StrictCharField(min_length=1, max_length=MESSAGE_MAX)
    resources = ResourceRefSerializer(
        many=True,
        required=False,
        help_text="MCP resources to attach (at most 5): each listed by a toolset the session "
        "uses (GET /api/sessions/<id>/resources/); the run reads them from the server.",
    )
    intent = StrictChoiceField(
        choices=[("reply", "Reply"), ("confirm", "Confirm the plan")],
        required=False,
        default="reply",
        help_text="'confirm': this message is the go-ahead for the plan waiting for one "
        "(refused with code already_decided when none waits).",
    )


class MessagesQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=2**62,
        help_text="Only messages after this id.",
    )
    limit = serializers.IntegerField(required=False, default=200, min_value=1, max_value=1000)


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=AgentRun.Status.choices)
    error = serializers.CharField()
    pause_reason = serializers.CharField(
        allow_null=True,
        help_text="Why a waiting run waits: 'confirm', 'budget' or 'approval'.",
    )
    model = serializers.CharField()
    cancel_requested = serializers.BooleanField()
    step_count = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost_usd = serializers.CharField(help_text="Decimal as a string.")
    created_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    queue_position = serializers.IntegerField(
        allow_null=True,
        help_text=(
            "For a queued run waiting for a free place among its owner's runs in flight "
            "(PLANBOARD_USER_RUNS_IN_FLIGHT): its 1-based place in that queue; else null."
        ),
    )


class MessageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True)
    role = serializers.ChoiceField(choices=Message.Role.choices)
    author = serializers.CharField(allow_null=True)
    content = serializers.CharField()
    tool_calls = serializers.JSONField(allow_null=True)
    tool_call_id = serializers.CharField(allow_null=True)
    tool_name = serializers.CharField(allow_null=True)
    answer_id = serializers.CharField(
        allow_null=True, help_text="For a streamed answer: the id its message.delta events had."
    )
    attachments = serializers.JSONField(
        help_text="A person's message: the resources attached ({toolset_id, toolset, uri, name})."
    )
    attachment = serializers.JSONField(
        allow_null=True,
        help_text="The contents of one attached resource as the run read them (`content`): "
        "{toolset_id, toolset, uri, name, of_message, ok}.",
    )
    created_at = serializers.DateTimeField(allow_null=True)


class MessagePostedSerializer(serializers.Serializer):
    message = MessageSerializer()
    run = RunSerializer()


class MessagesPageSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)
    has_more = serializers.BooleanField()


class CancelResultSerializer(serializers.Serializer):
    run = RunSerializer(allow_null=True, help_text="The run asked to stop; null if none ran.")
