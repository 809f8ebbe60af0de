"""Input parsing for the REST API, and the response shapes documented in the OpenAPI schema,
one module per API area; every name is importable from here.

Input serializers check only shape, types and lengths (limits from `planboard.models`); every
business rule lives in `planboard.services`. JSON types are strict: `"5"` is not a number and
`1` is not a string, so a client bug shows up as a clear 400 instead of a silent coercion.
Unknown fields are refused too, so a misspelt field is not ignored quietly.

Output serializers describe what `planboard.snapshots` produces; views return those dicts
as they are, and the serializers exist so that `/api/schema/` documents them exactly.

- `base`: the strict fields and field factories, `InputSerializer`, the user reference and
  error shapes
- `auth`: signing in for a token
- `profiles`: agent profiles
- `plans`: plans, subtasks and their events
- `messages`: posting a message, the transcript, runs
- `files`: workspace files
- `tool_calls`: tool calls and their servers' questions (elicitations)
- `toolsets`: toolsets and their tools, credentials, a session's resources and prompts
- `sessions`: sessions, and a session as opened (with its plan, runs, pending calls and files)
- `forks`, `templates`, `schedules`, `inbox`: those endpoints' shapes; not re-exported here,
  their views import the module (`from planboard.api.serializers import inbox as s`)

Each module imports only `base` and modules listed above it.
"""

from planboard.api.serializers.auth import TokenRequestSerializer, TokenSerializer
from planboard.api.serializers.base import (
    IGNORED_INPUT_KEYS,
    NUMBER_MAX,
    ErrorSerializer,
    InputSerializer,
    MoneyField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    UserRefSerializer,
    money_field,
    name_field,
    profile_name_field,
    text_field,
    tokens_field,
    version_field,
)
from planboard.api.serializers.files import WorkspaceFileSerializer, WorkspaceFilesSerializer
from planboard.api.serializers.messages import (
    CancelResultSerializer,
    MessageCreateSerializer,
    MessagePostedSerializer,
    MessageSerializer,
    MessagesPageSerializer,
    MessagesQuerySerializer,
    ResourceRefSerializer,
    RunSerializer,
)
from planboard.api.serializers.plans import (
    ActorSerializer,
    EventSeenSerializer,
    EventsPageSerializer,
    EventsQuerySerializer,
    PlanEventSerializer,
    PlanListItemSerializer,
    PlanSnapshotSerializer,
    PlanUpdateSerializer,
    PlanWriteResultSerializer,
    StaleVersionSerializer,
    SubtaskCountsSerializer,
    SubtaskCreatedSerializer,
    SubtaskCreateSerializer,
    SubtaskDeletedSerializer,
    SubtaskSnapshotSerializer,
    SubtaskUpdateSerializer,
    VersionQuerySerializer,
    blocked_by_field,
)
from planboard.api.serializers.profiles import ProfileSerializer, ProfileWriteSerializer
from planboard.api.serializers.sessions import (
    SessionCreateSerializer,
    SessionListItemSerializer,
    SessionSerializer,
    SessionSnapshotSerializer,
    SessionUpdateSerializer,
)
from planboard.api.serializers.tool_calls import (
    ElicitationAnsweredSerializer,
    ElicitationAnswerSerializer,
    ElicitationSerializer,
    ElicitationsPageSerializer,
    ElicitationsQuerySerializer,
    ToolCallDecidedSerializer,
    ToolCallDecisionSerializer,
    ToolCallSerializer,
    ToolCallsPageSerializer,
    ToolCallsQuerySerializer,
)
from planboard.api.serializers.toolsets import (
    PromptGetSerializer,
    PromptTextSerializer,
    SessionPromptSerializer,
    SessionPromptsSerializer,
    SessionResourceSerializer,
    SessionResourcesSerializer,
    ToolsetCredentialSerializer,
    ToolsetRefreshedSerializer,
    ToolsetSerializer,
    ToolsetToolSerializer,
    ToolsetWriteSerializer,
)

__all__ = [
    "IGNORED_INPUT_KEYS",
    "NUMBER_MAX",
    "ActorSerializer",
    "CancelResultSerializer",
    "ElicitationAnswerSerializer",
    "ElicitationAnsweredSerializer",
    "ElicitationSerializer",
    "ElicitationsPageSerializer",
    "ElicitationsQuerySerializer",
    "ErrorSerializer",
    "EventSeenSerializer",
    "EventsPageSerializer",
    "EventsQuerySerializer",
    "InputSerializer",
    "MessageCreateSerializer",
    "MessagePostedSerializer",
    "MessageSerializer",
    "MessagesPageSerializer",
    "MessagesQuerySerializer",
    "MoneyField",
    "PlanEventSerializer",
    "PlanListItemSerializer",
    "PlanSnapshotSerializer",
    "PlanUpdateSerializer",
    "PlanWriteResultSerializer",
    "ProfileSerializer",
    "ProfileWriteSerializer",
    "PromptGetSerializer",
    "PromptTextSerializer",
    "ResourceRefSerializer",
    "RunSerializer",
    "SessionCreateSerializer",
    "SessionListItemSerializer",
    "SessionPromptSerializer",
    "SessionPromptsSerializer",
    "SessionResourceSerializer",
    "SessionResourcesSerializer",
    "SessionSerializer",
    "SessionSnapshotSerializer",
    "SessionUpdateSerializer",
    "StaleVersionSerializer",
    "StrictBooleanField",
    "StrictCharField",
    "StrictChoiceField",
    "StrictIntegerField",
    "SubtaskCountsSerializer",
    "SubtaskCreateSerializer",
    "SubtaskCreatedSerializer",
    "SubtaskDeletedSerializer",
    "SubtaskSnapshotSerializer",
    "SubtaskUpdateSerializer",
    "TokenRequestSerializer",
    "TokenSerializer",
    "ToolCallDecidedSerializer",
    "ToolCallDecisionSerializer",
    "ToolCallSerializer",
    "ToolCallsPageSerializer",
    "ToolCallsQuerySerializer",
    "ToolsetCredentialSerializer",
    "ToolsetRefreshedSerializer",
    "ToolsetSerializer",
    "ToolsetToolSerializer",
    "ToolsetWriteSerializer",
    "UserRefSerializer",
    "VersionQuerySerializer",
    "WorkspaceFileSerializer",
    "WorkspaceFilesSerializer",
    "blocked_by_field",
    "money_field",
    "name_field",
    "profile_name_field",
    "text_field",
    "tokens_field",
    "version_field",
]
