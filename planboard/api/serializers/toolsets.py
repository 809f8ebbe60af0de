"""Toolsets (MCP servers) and their tools as staff configure them, a person's own credential,
and what a session's toolsets offer besides tools: resources and prompts."""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from planboard.api.serializers.base import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
)
from planboard.models import NAME_MAX, TEXT_MAX, Toolset, ToolsetTool


class ToolsetToolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    input_schema = serializers.JSONField()
    # A field named like a Field attribute: DRF's metaclass takes declared fields off the class.
    read_only = serializers.BooleanField(help_text="The server's readOnlyHint.")  # type: ignore[assignment]
    policy = serializers.ChoiceField(choices=ToolsetTool.Policy.choices)
    policy_overridden = serializers.BooleanField(help_text="Set by staff; kept by refreshes.")
    signed_in_only = serializers.BooleanField(
        help_text="Set by staff: its calls are approved only by someone signed in; a "
        "notification's link may deny one but never approve it."
    )
    needs_review = serializers.BooleanField(
        help_text="The server changed the tool (description, schema or read-only claim) since "
        "a person set its policy, or newly claims it is read-only: it asks at least until "
        "staff set its policy again."
    )
    available = serializers.BooleanField(help_text="False once the server stopped listing it.")
    unsupported = serializers.CharField(
        help_text="Why Planboard does not offer the tool although the server lists it (e.g. "
        "it runs only as an MCP task); empty: offered."
    )


class ToolsetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.ChoiceField(choices=Toolset.Kind.choices)
    enabled = serializers.BooleanField()
    access = serializers.ChoiceField(
        choices=Toolset.Access.choices,
        help_text="shared: the toolset's own credentials serve everyone; per_person: each "
        "person connects their own (PUT /api/toolsets/{id}/credential/).",
    )
    auth = serializers.ChoiceField(
        choices=Toolset.Auth.choices,
        help_text="oauth: calls sign in with an account connected at the server's provider "
        "(open /toolsets/{id}/connect/ in a browser to connect or reconnect).",
    )
    roots = serializers.ChoiceField(
        choices=Toolset.Roots.choices,
        help_text="What the server is given when it asks for roots: none (the roots capability "
        "is not declared: it keeps the folders it was started with) or workspace (a stdio "
        "server only: a folder tree of the session's files under their own names; what it "
        "writes there comes back as the session's files).",
    )
    connected = serializers.BooleanField(
        help_text="Whether calls in your sessions can reach the server: always for a shared "
        "toolset, once you have set your credential for a per-person one."
    )
    teams = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Staff only: the teams it is limited to (empty: everyone).",
    )
    refreshed_at = serializers.DateTimeField(allow_null=True)
    refresh_error = serializers.CharField(
        required=False,
        help_text="Staff only: why the last listing of its tools failed (the server could not "
        "be reached, or lists more than the limits allow); empty once one succeeds.",
    )
    tools = ToolsetToolSerializer(many=True)
    # Staff allowed to view toolsets only: how the server is reached. Secret values are never
    # returned, only names.
    command = serializers.CharField(required=False)
    args = serializers.ListField(child=serializers.CharField(), required=False)
    env_names = serializers.ListField(child=serializers.CharField(), required=False)
    url = serializers.CharField(
        required=False, help_text="User, password and query values show as REDACTED."
    )
    header_names = serializers.ListField(child=serializers.CharField(), required=False)
    catalog = serializers.JSONField(
        required=False,
        help_text="Staff only: what else the server offered at its last listing: `resources`, "
        "resource `templates` and `prompts` (each a list), and `truncated`, the kinds it "
        "listed more of than were kept.",
    )
    created_at = serializers.DateTimeField(required=False, allow_null=True)
    updated_at = serializers.DateTimeField(required=False, allow_null=True)


class ToolsetWriteSerializer(InputSerializer):
    name = StrictCharField(max_length=50, required=False)
    title = StrictCharField(max_length=NAME_MAX, required=False, allow_blank=True)
    # Built-in toolsets ship with Planboard: nobody makes one.
    kind = StrictChoiceField(
        choices=[(k, label) for k, label in Toolset.Kind.choices if k != Toolset.Kind.BUILTIN],
        required=False,
    )
    command = StrictCharField(max_length=500, required=False, allow_blank=True)
    args = serializers.ListField(
        child=StrictCharField(max_length=TEXT_MAX, allow_blank=True), required=False, max_length=100
    )
    env = serializers.DictField(
        child=StrictCharField(max_length=8000, allow_blank=True, allow_null=True),
        required=False,
        help_text="Environment of a stdio server: write-only secret values (null removes one).",
    )
    url = StrictCharField(
        max_length=500,
        required=False,
        allow_blank=True,
        help_text="REDACTED parts keep their stored values on the same scheme, host and port; "
        "a new destination drops the stored env and headers.",
    )
    headers = serializers.DictField(
        child=StrictCharField(max_length=8000, allow_blank=True, allow_null=True),
        required=False,
        help_text="HTTP headers sent to the server: write-only secret values (null removes one).",
    )
    enabled = StrictBooleanField(required=False)
    access = StrictChoiceField(choices=Toolset.Access.choices, required=False)
    auth = StrictChoiceField(
        choices=Toolset.Auth.choices,
        required=False,
        help_text="headers: the static headers above; oauth: people connect an account at the "
        "server's provider (GET /toolsets/{id}/connect/ in a browser).",
    )
    roots = StrictChoiceField(
        choices=Toolset.Roots.choices,
        required=False,
        help_text="What the server is given when it asks for roots: none (the roots capability "
        "is not declared: it keeps the folders it was started with) or workspace (a stdio "
        "server only: a folder tree of the session's files under their own names; what it "
        "writes there comes back as the session's files).",
    )
    teams = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=200,
        help_text="Team ids it is limited to (empty: everyone).",
    )
    tool_policies = serializers.DictField(
        child=StrictChoiceField(choices=ToolsetTool.Policy.choices, allow_null=True),
        required=False,
        help_text="Tool name -> auto | ask | never; null returns a tool to its default.",
    )
    tool_signed_in_only = serializers.DictField(
        child=StrictBooleanField(),
        required=False,
        help_text="Tool name -> true: its calls are approved only by someone signed in (a "
        "notification's link can deny, not approve); false: links may approve too.",
    )


class ToolsetCredentialSerializer(InputSerializer):
    env = serializers.DictField(
        child=StrictCharField(max_length=8000, allow_blank=True, allow_null=True),
        required=False,
        help_text="Your own environment values for a stdio server (null removes one).",
    )
    headers = serializers.DictField(
        child=StrictCharField(max_length=8000, allow_blank=True, allow_null=True),
        required=False,
        help_text="Your own HTTP headers, e.g. Authorization (null removes one).",
    )


class ToolsetRefreshedSerializer(serializers.Serializer):
    toolset = ToolsetSerializer()
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    skipped = serializers.ListField(
        child=serializers.CharField(), help_text="Tools whose names no model could call."
    )
    too_large = serializers.ListField(
        child=serializers.CharField(),
        help_text="Tools left out: description and input schema over "
        "PLANBOARD_TOOL_SCHEMA_MAX_BYTES.",
    )


# --- what a session's toolsets offer besides tools: resources and prompts -------------------------


class SessionResourceSerializer(serializers.Serializer):
    toolset_id = serializers.IntegerField()
    toolset = serializers.CharField(help_text="The toolset's name.")
    uri = serializers.CharField()
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    mime_type = serializers.CharField()
    size = serializers.IntegerField(allow_null=True)


class SessionResourcesSerializer(serializers.Serializer):
    results = SessionResourceSerializer(many=True)


class SessionPromptSerializer(serializers.Serializer):
    toolset_id = serializers.IntegerField()
    toolset = serializers.CharField(help_text="The toolset's name.")
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    # `required` is a Field attribute: the argument's fields are declared as a mapping.
    arguments = inline_serializer(
        name="PromptArgument",
        fields={
            "name": serializers.CharField(),
            "description": serializers.CharField(),
            "required": serializers.BooleanField(),
        },
        many=True,
    )


class SessionPromptsSerializer(serializers.Serializer):
    results = SessionPromptSerializer(many=True)


class PromptGetSerializer(InputSerializer):
    toolset_id = StrictIntegerField(min_value=1, max_value=2**62)
    name = StrictCharField(min_length=1, max_length=200)
    arguments = serializers.DictField(
        child=StrictCharField(allow_blank=True, max_length=2000),
        required=False,
        default=dict,
        help_text="The prompt's arguments by name (text).",
    )


class PromptTextSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="The prompt's text, for the person to edit and send.")
