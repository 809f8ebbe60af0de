"""Agent profiles: their shape, and what staff write."""

from __future__ import annotations

from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    money_field,
    text_field,
    tokens_field,
)
from planboard.models import NAME_MAX, BudgetPeriod


class ProfileSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    model = serializers.CharField()
    # Staff allowed to view profiles only: how the profile is set up.
    api_base = serializers.CharField(required=False)
    api_key_env = serializers.CharField(
        required=False,
        help_text="The NAME of the environment variable holding the key (never the key).",
    )
    instructions = serializers.CharField(required=False)
    max_steps = serializers.IntegerField(required=False, allow_null=True)
    budget_usd = serializers.FloatField(required=False, allow_null=True)
    budget_tokens = serializers.IntegerField(required=False, allow_null=True)
    user_budget_period = serializers.ChoiceField(choices=BudgetPeriod.choices, required=False)
    user_budget_usd = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="What each person may spend per period, all sessions together.",
    )
    user_budget_tokens = serializers.IntegerField(required=False, allow_null=True)
    price_input_per_mtok = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="US dollars per million prompt tokens, for unpriced models.",
    )
    price_output_per_mtok = serializers.FloatField(required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False)
    toolsets = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="The toolsets this profile may use; empty = the session's toolsets.",
    )


class ProfileWriteSerializer(InputSerializer):
    name = StrictCharField(max_length=50, required=False)
    title = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    description = text_field()
    model = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    api_base = StrictCharField(max_length=500, required=False, allow_blank=True)
    api_key_env = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    instructions = text_field()
    max_steps = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=10_000)
    budget_usd = money_field()
    budget_tokens = tokens_field()
    user_budget_period = StrictChoiceField(choices=BudgetPeriod.choices, required=False)
    user_budget_usd = money_field()
    user_budget_tokens = tokens_field()
    price_input_per_mtok = money_field()
    price_output_per_mtok = money_field()
    enabled = StrictBooleanField(required=False)
    toolsets = serializers.ListField(child=StrictIntegerField(), required=False, max_length=100)
