"""Input parsing for the REST API, and the response shapes documented in the OpenAPI schema.

Input serializers check only shape, types and lengths (limits from `planboard.models`); every
business rule lives in `planboard.services`. JSON types are strict: `"5"` is not a number and
`1` is not a string, so a client bug shows up as a clear 400 instead of a silent coercion.
Unknown fields are refused too, so a misspelt field is not ignored quietly.

Output serializers describe what `planboard.snapshots` produces; views return those dicts
as they are, and the serializers exist so that `/api/schema/` documents them exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, ClassVar, Literal

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from planboard.models import (
    MESSAGE_MAX,
    NAME_MAX,
    SUBTASKS_HARD_LIMIT,
    TEXT_MAX,
    AgentRun,
    BudgetPeriod,
    Channel,
    ChatSession,
    Elicitation,
    Message,
    State,
    ToolCall,
    Toolset,
    ToolsetTool,
)

# Versions and indices beyond this are nonsense; bounding them keeps huge numbers out of SQL.
NUMBER_MAX = 2**31 - 1
# Fields a browser form may add that are not part of any payload.
IGNORED_INPUT_KEYS = frozenset({"csrfmiddlewaretoken"})


# --- strict JSON fields ---------------------------------------------------------------------------


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


# --- sessions and messages ------------------------------------------------------------------------


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


# --- plans and subtasks ---------------------------------------------------------------------------


class PlanUpdateSerializer(InputSerializer):
    needs_one_of = ("name", "description", "expected_outcome", "state")
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    state = StrictChoiceField(
        choices=State.choices,
        required=False,
        # Which states may finish a plan is the service's rule, not the parser's.
        help_text="`done` or `abandoned` finishes the plan (needs `outcome`).",
    )
    outcome = text_field()
    expected_version = version_field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if "outcome" in attrs and "state" not in attrs:
            raise serializers.ValidationError(
                {"outcome": ["An outcome is given when finishing the plan: add `state`."]}
            )
        return attrs


def blocked_by_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=2**63 - 1),
        required=False,
        max_length=SUBTASKS_HARD_LIMIT,
        help_text=help_text,
    )


class SubtaskCreateSerializer(InputSerializer):
    name = name_field(required=True)
    description = text_field()
    expected_outcome = text_field()
    index = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=-NUMBER_MAX,
        max_value=NUMBER_MAX,
        help_text="0-based position to insert before; appended when left out.",
    )
    agent = StrictCharField(max_length=50, required=False, allow_blank=True)
    blocked_by = blocked_by_field(
        "Ids of subtasks of this plan that must be done or abandoned before this one starts."
    )
    expected_version = version_field()


class SubtaskUpdateSerializer(InputSerializer):
    needs_one_of = (
        "name",
        "description",
        "expected_outcome",
        "outcome",
        "agent",
        "blocked_by",
        "state",
        "index",
    )
    name = name_field(required=False)
    description = text_field()
    expected_outcome = text_field()
    outcome = text_field()
    agent = StrictCharField(
        max_length=50,
        required=False,
        allow_blank=True,
        help_text="The agent profile that does this subtask; empty for the session's.",
    )
    blocked_by = blocked_by_field(
        "Ids of subtasks of this plan that must be done or abandoned before this one starts "
        "(replaces the list; [] for none). Cycles and the subtask itself are refused."
    )
    state = StrictChoiceField(choices=State.choices, required=False)
    index = StrictIntegerField(
        required=False,
        min_value=-NUMBER_MAX,
        max_value=NUMBER_MAX,
        help_text="Move the subtask to this 0-based position.",
    )
    expected_version = version_field()


class VersionQuerySerializer(serializers.Serializer):
    expected_version = serializers.IntegerField(required=False, min_value=0, max_value=NUMBER_MAX)


class EventsQuerySerializer(serializers.Serializer):
    since = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=NUMBER_MAX,
        help_text="Only events after this plan version.",
    )
    limit = serializers.IntegerField(required=False, default=500, min_value=1, max_value=1000)


# --- response shapes (documentation) --------------------------------------------------------------


class UserRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class SubtaskSnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    outcome = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    agent = serializers.CharField(
        allow_null=True, help_text="The agent profile that does this subtask (null: default)."
    )
    blocked_by = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Ids of the subtasks of this plan it waits for, in board order ([]: none).",
    )
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class PlanSnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.IntegerField(allow_null=True)
    owner = UserRefSerializer()
    name = serializers.CharField()
    description = serializers.CharField()
    expected_outcome = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    outcome = serializers.CharField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    subtasks = SubtaskSnapshotSerializer(many=True)


class SubtaskCountsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    todo = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    done = serializers.IntegerField()
    abandoned = serializers.IntegerField()


class PlanListItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    state = serializers.ChoiceField(choices=State.choices)
    owner = UserRefSerializer()
    session_id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    subtask_counts = SubtaskCountsSerializer()


class ActorSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["user", "agent", "system"])
    user_id = serializers.IntegerField(allow_null=True)
    username = serializers.CharField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)


class EventSeenSerializer(serializers.Serializer):
    at = serializers.DateTimeField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)
    step = serializers.IntegerField(allow_null=True)
    after_steps = serializers.IntegerField(allow_null=True)


class PlanEventSerializer(serializers.Serializer):
    type = serializers.CharField(help_text='Always "plan.event", as on the websockets.')
    plan_id = serializers.IntegerField()
    session_id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField()
    action = serializers.CharField()
    actor = ActorSerializer()
    subtask_id = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    patch = serializers.JSONField(help_text="Applied to the snapshot at version-1.")
    created_at = serializers.DateTimeField(allow_null=True)
    seen = EventSeenSerializer(
        allow_null=True, help_text="When the agent was first shown this change (people's edits)."
    )


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


class WorkspaceFileSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField(help_text="Relative path, like 'notes/day-1.md'.")
    size = serializers.IntegerField(help_text="Bytes.")
    produced_by_run_id = serializers.IntegerField(
        allow_null=True, help_text="The run whose agent last wrote it."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    url = serializers.CharField(help_text="Downloads it (GET, same access as the session).")
    download_url = serializers.CharField(help_text="The same download for the web pages.")


class WorkspaceFilesSerializer(serializers.Serializer):
    results = WorkspaceFileSerializer(many=True)


class SessionSnapshotSerializer(SessionSerializer):
    current_plan = PlanSnapshotSerializer(allow_null=True)
    latest_run = RunSerializer(allow_null=True)
    toolsets = serializers.ListField(
        child=serializers.IntegerField(), help_text="Toolsets the agent may use here."
    )
    pending_tool_calls = ToolCallSerializer(
        many=True, help_text="Tool calls waiting for a person's decision."
    )
    pending_elicitations = ElicitationSerializer(
        many=True, help_text="Questions the tools' servers ask, waiting for an answer."
    )
    files = WorkspaceFileSerializer(many=True, help_text="Files the agent wrote here.")


class MessagePostedSerializer(serializers.Serializer):
    message = MessageSerializer()
    run = RunSerializer()


class MessagesPageSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)
    has_more = serializers.BooleanField()


class CancelResultSerializer(serializers.Serializer):
    run = RunSerializer(allow_null=True, help_text="The run asked to stop; null if none ran.")


class PlanWriteResultSerializer(serializers.Serializer):
    plan = PlanSnapshotSerializer()


class SubtaskCreatedSerializer(PlanWriteResultSerializer):
    subtask_id = serializers.IntegerField()


class SubtaskDeletedSerializer(PlanWriteResultSerializer):
    deleted = SubtaskSnapshotSerializer()


class EventsPageSerializer(serializers.Serializer):
    results = PlanEventSerializer(many=True)
    has_more = serializers.BooleanField()


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="What went wrong and what to do instead.")
    code = serializers.CharField()
    # Named like Serializer.fields: DRF's metaclass takes declared fields off the class.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.JSONField(), required=False, help_text="Per-field messages."
    )


class StaleVersionSerializer(ErrorSerializer):
    snapshot = PlanSnapshotSerializer(help_text="The plan as it is now.")


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    # Spaces at either end are part of a password.
    password = serializers.CharField(trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


# --- agent profiles ---------------------------------------------------------------------------


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


# --- toolsets and tool calls ------------------------------------------------------------------


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
