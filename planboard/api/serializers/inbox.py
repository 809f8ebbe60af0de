"""Shapes of the inbox endpoints: what waits on a person, the decisions record, "not now",
bulk approval, and who may answer a session (docs/INBOX.md)."""

from __future__ import annotations

from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
)
from planboard.api.serializers.tool_calls import ToolCallSerializer
from planboard.models import Channel, Decision, NotificationSettings
from planboard.services.inbox import ANSWERERS_MAX, BULK_MAX

ITEM_KEY_HELP = (
    "`tool_call:<id>` (an approval), `run:<id>:<wait>` (a run waiting for the user; `wait` "
    "counts its waits, so a run that waits again is a new item) or `elicitation:<id>`."
)


class InboxSessionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    owner = serializers.CharField(help_text="The owner's username.")


class InboxRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class InboxToolCallSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    tool_call_id = serializers.CharField()
    tool_name = serializers.CharField()
    arguments = serializers.CharField(help_text="The arguments as JSON, cut at 300 characters.")
    run_id = serializers.IntegerField(allow_null=True)
    same_request = serializers.CharField(
        help_text="Equal for calls of the same tool with the same arguments (bulk approval)."
    )
    signed_in_only = serializers.BooleanField(
        help_text="Its tool is approved only by someone signed in: notification links can deny "
        "the call, not approve it."
    )


class InboxPlanSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField(help_text="The revision a confirmation confirms.")
    subtasks = InboxRefSerializer(many=True, help_text="Its steps, in order.")


class InboxBudgetSerializer(serializers.Serializer):
    spent_usd = serializers.CharField()
    budget_usd = serializers.CharField(allow_null=True)
    spent_tokens = serializers.IntegerField()
    budget_tokens = serializers.IntegerField(allow_null=True)


class InboxElicitationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    toolset = serializers.CharField()
    tool_name = serializers.CharField(allow_null=True)
    mode = serializers.CharField(help_text="form or url")
    message = serializers.CharField(help_text="The server's words (cut at 600 characters).")
    requested_schema = serializers.JSONField()
    url = serializers.CharField()
    run_id = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class InboxItemSerializer(serializers.Serializer):
    key = serializers.CharField(help_text=ITEM_KEY_HELP)
    kind = serializers.ChoiceField(choices=Decision.Kind.choices)
    session = InboxSessionSerializer()
    subtask = InboxRefSerializer(allow_null=True, help_text="The subtask in progress, if any.")
    since = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField(help_text="The spot in the session page.")
    actions = serializers.ListField(
        child=serializers.CharField(),
        help_text="approve, deny, always_allow, confirm, raise_budget, reply, accept, decline, "
        "cancel: what you may do.",
    )
    snoozed_until = serializers.DateTimeField(allow_null=True)
    tool_call = InboxToolCallSerializer(allow_null=True)
    plan = InboxPlanSerializer(allow_null=True)
    budget = InboxBudgetSerializer(allow_null=True)
    question = serializers.CharField(allow_null=True, help_text="The agent's last answer.")
    elicitation = InboxElicitationSerializer(
        allow_null=True,
        help_text="A tool's question (answer: POST /api/elicitations/{id}/answer/).",
    )


class InboxSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="Items shown (snoozed ones not counted).")
    results = InboxItemSerializer(many=True)


class InboxQuerySerializer(serializers.Serializer):
    snoozed = serializers.BooleanField(
        required=False, default=False, help_text="Also list the items you said 'not now' to."
    )


class SnoozeSerializer(InputSerializer):
    key = StrictCharField(max_length=100, help_text=ITEM_KEY_HELP)
    minutes = StrictIntegerField(
        min_value=0,
        max_value=30 * 24 * 60,
        required=False,
        default=60,
        help_text="Hide the item for this long; 0 shows it again.",
    )
    until = serializers.DateTimeField(
        required=False, help_text="Or: hide it until this time (ISO 8601, at most 30 days)."
    )


class SnoozedSerializer(serializers.Serializer):
    key = serializers.CharField()
    until = serializers.DateTimeField(allow_null=True)


class BulkApproveSerializer(InputSerializer):
    keys = serializers.ListField(
        child=StrictCharField(max_length=100), min_length=1, max_length=BULK_MAX
    )


class BulkApprovedSerializer(serializers.Serializer):
    tool_calls = ToolCallSerializer(many=True)


class AnswerersSerializer(InputSerializer):
    usernames = serializers.ListField(
        child=StrictCharField(max_length=150), max_length=ANSWERERS_MAX
    )


class AnswerersOutSerializer(serializers.Serializer):
    usernames = serializers.ListField(child=serializers.CharField())


NAMED_BY_HELP = (
    "Who may name you to answer their sessions: `anyone`, `team` (people who share a team "
    "with you; the default) or `nobody`. Sessions you are named on already keep you."
)


class AnswererConsentSerializer(InputSerializer):
    named_by = StrictChoiceField(
        choices=NotificationSettings.NamedBy.choices, help_text=NAMED_BY_HELP
    )


class AnswererConsentOutSerializer(serializers.Serializer):
    named_by = serializers.ChoiceField(
        choices=NotificationSettings.NamedBy.choices, help_text=NAMED_BY_HELP
    )


class DecisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True)
    plan_id = serializers.IntegerField(allow_null=True)
    tool_call_id = serializers.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=Decision.Kind.choices)
    decision = serializers.ChoiceField(choices=Decision.Choice.choices)
    user = serializers.CharField(allow_null=True, help_text="Who decided (null: expiry).")
    channel = StrictChoiceField(choices=Channel.choices)
    summary = serializers.CharField()
    created_at = serializers.DateTimeField()


class DecisionListSerializer(serializers.Serializer):
    results = DecisionSerializer(many=True)


class NotificationSettingsInSerializer(InputSerializer):
    kinds = serializers.ListField(
        child=StrictChoiceField(choices=Decision.Kind.choices),
        required=False,
        max_length=len(Decision.Kind.choices),
        help_text="Which waiting items notify you.",
    )
    email = StrictBooleanField(required=False, help_text="Email your account's address.")
    webhook_url = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="Empty: no webhook."
    )
    delay_seconds = StrictIntegerField(
        min_value=0,
        max_value=7 * 24 * 3600,
        required=False,
        help_text="Nothing is sent if you answer within this many seconds.",
    )
    rotate_secret = StrictBooleanField(
        required=False, default=False, help_text="Make a new webhook signing secret."
    )


class NotificationSettingsSerializer(serializers.Serializer):
    kinds = serializers.ListField(child=serializers.CharField())
    email = serializers.BooleanField()
    email_address = serializers.CharField(help_text="Where email goes (your account's).")
    webhook_url = serializers.CharField()
    webhook_secret_set = serializers.BooleanField()
    webhook_secret = serializers.CharField(
        allow_null=True,
        help_text="The HMAC-SHA256 key of the signature header: shown once, when it is made.",
    )
    delay_seconds = serializers.IntegerField()
