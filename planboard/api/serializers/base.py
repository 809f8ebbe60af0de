"""What every area's serializers share: strict JSON fields and the field factories built on
them, `InputSerializer` (unknown fields refused, "at least one of" rules), and the shapes every
area answers with (a user reference, an error)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, ClassVar, Literal

from rest_framework import serializers

from planboard.models import NAME_MAX, TEXT_MAX

# Versions and indices beyond this are nonsense; bounding them keeps huge numbers out of SQL.
NUMBER_MAX = 2**31 - 1
# Fields a browser form may add that are not part of any payload.
IGNORED_INPUT_KEYS = frozenset({"csrfmiddlewaretoken"})


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be a whole number."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


def name_field(*, required: bool) -> StrictCharField:
    return StrictCharField(min_length=1, max_length=NAME_MAX, required=required)


def text_field() -> StrictCharField:
    return StrictCharField(max_length=TEXT_MAX, required=False, allow_blank=True)


def version_field() -> StrictIntegerField:
    return StrictIntegerField(
        required=False,
        min_value=0,
        max_value=NUMBER_MAX,
        help_text="The plan version this change is based on; a newer plan answers 409.",
    )


# Refuses fields it does not know, naming them, and a body without any of `needs_one_of`
# ("__all__": any of its fields). planboard.api.schema puts both rules, and `schema_rules`,
# into the OpenAPI schema. (A comment, not a docstring: docstrings become schema descriptions.)
class InputSerializer(serializers.Serializer):
    needs_one_of: ClassVar[tuple[str, ...] | Literal["__all__"]] = ()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields) - IGNORED_INPUT_KEYS)
            if unknown:
                message = f"Unknown field; the accepted fields are: {', '.join(self.fields)}."
                raise serializers.ValidationError({key: [message] for key in unknown})
        return super().to_internal_value(data)

    def one_of_fields(self) -> tuple[str, ...]:
        return tuple(self.fields) if self.needs_one_of == "__all__" else self.needs_one_of

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        fields = self.one_of_fields()
        if fields and not any(field in attrs for field in fields):
            raise serializers.ValidationError(f"Give at least one of: {', '.join(fields)}.")
        return attrs

    def schema_rules(self) -> dict[str, Any]:
        """JSON Schema keywords for the rules `validate` checks across fields."""
        fields = self.one_of_fields()
        return {"anyOf": [{"required": [field]} for field in fields]} if fields else {}


def profile_name_field() -> StrictCharField:
    return StrictCharField(
        max_length=50,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="An agent profile's name; empty or null for the default.",
    )


class MoneyField(serializers.DecimalField):
    """JSON numbers are binary floats (0.1 + 0.2 has 17 decimals): rounded to the stored
    places instead of refused."""

    def validate_precision(self, value: Decimal) -> Decimal:
        try:
            value = self.quantize(value)
        except InvalidOperation:  # Too many whole digits to round: refused as such below.
            pass
        return super().validate_precision(value)


def money_field() -> serializers.DecimalField:
    return MoneyField(
        max_digits=12,
        decimal_places=4,
        rounding=ROUND_HALF_UP,
        min_value=0,
        # Below 10**8 whole dollars also once rounded.
        max_value=Decimal("99999999.9999"),
        required=False,
        allow_null=True,
        coerce_to_string=False,
        help_text="US dollars; null for no limit.",
    )


def tokens_field() -> StrictIntegerField:
    return StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=2_000_000_000,
        help_text="Tokens; null for no limit.",
    )


class UserRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="What went wrong and what to do instead.")
    code = serializers.CharField()
    # Named like Serializer.fields: DRF's metaclass takes declared fields off the class.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.JSONField(), required=False, help_text="Per-field messages."
    )
