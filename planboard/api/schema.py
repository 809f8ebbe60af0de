"""What the parsers refuse, said in `/api/schema/` too, so that the schema is the contract.

drf-spectacular documents a field's type and limits; these extensions add the rest of what
`planboard.api.serializers` enforces on input: unknown fields are refused
(`additionalProperties: false`), a request that must name at least one field says which
(`InputSerializer.schema_rules`, which also make its body required), strings hold no null
characters, and one that may not be blank holds more than whitespace (DRF trims it before
the blank check). Loaded by `PlanboardConfig.ready`; `AutoSchema` is DRF's schema class.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi as spectacular
from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

from planboard.api.serializers import InputSerializer

# DRF refuses null characters in every string, and whitespace alone where blank is refused.
NO_NULLS = r"^[^\x00]*$"
NOT_BLANK = r"^[^\x00]*[^\x00\s][^\x00]*$"


class AutoSchema(spectacular.AutoSchema):
    def _get_request_for_media_type(self, serializer: Any, direction: Any = "request") -> Any:
        """A body is required where `{}` is refused: also when a rule across fields (at least
        one of them) refuses it, not only when a field is required."""
        schema, required = super()._get_request_for_media_type(serializer, direction)
        target = force_instance(serializer)
        if isinstance(target, InputSerializer) and target.schema_rules():
            required = True
        return schema, required


class InputSerializerSchema(OpenApiSerializerExtension):
    target_class = InputSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: spectacular.AutoSchema, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        schema["additionalProperties"] = False
        target: InputSerializer = self.target
        schema.update(target.schema_rules())
        return schema


class CharFieldSchema(OpenApiSerializerFieldExtension):
    """A string field of a request: no null characters, and where it may not be blank at least
    one character that is not whitespace. Responses are left alone (their strings may well be
    empty)."""

    target_class = serializers.CharField
    match_subclasses = True

    def map_serializer_field(
        self, auto_schema: spectacular.AutoSchema, direction: Any
    ) -> dict[str, Any]:
        field: serializers.CharField = self.target
        schema: dict[str, Any] = auto_schema._map_serializer_field(
            field, direction, bypass_extensions=True
        )
        if direction != "request" or field.read_only or "pattern" in schema:
            return schema
        if field.allow_blank:
            schema["pattern"] = NO_NULLS
            return schema
        schema["minLength"] = max(schema.get("minLength", 0), 1)
        schema["pattern"] = NOT_BLANK if field.trim_whitespace else NO_NULLS
        return schema
