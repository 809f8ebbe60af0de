"""The plan domain's tables, one module per area; every name is importable from here.

Writes to these models go through `planboard.services` only; reads that build what users and
the agent see go through `planboard.selectors`.

- `limits`: length limits shared with the services, serializers and tool schemas
- `teams`: Team, TeamMembership
- `toolsets`: Toolset, ToolsetTool, ToolsetCredential, SessionToolset
- `profiles`: AgentProfile (with BudgetPeriod), ProfileUsage
- `sessions`: ChatSession, AgentRun, Message
- `plans`: State, Plan, SubTask, PlanEvent (history), PlanFork
- `tool_calls`: ToolCall, Elicitation, InputRound
- `files`: WorkspaceFile
- `inbox`: Channel, Decision, InboxSnooze, NotificationSettings, Notification, ActionLink
- `templates`: PlanTemplate, Schedule, ScheduleOccurrence

Each module imports only those above it in this list, and they are imported below in that
order (a reference the other way is a string: `SessionToolset.session`,
`ChatSession.current_plan`).
"""

# isort: off
from planboard.models.limits import MESSAGE_MAX, NAME_MAX, SUBTASKS_HARD_LIMIT, TEXT_MAX
from planboard.models.teams import Team, TeamMembership
from planboard.models.toolsets import (
    TOOL_NAME_MAX,
    TOOLSET_NAME_MAX,
    SessionToolset,
    Toolset,
    ToolsetCredential,
    ToolsetTool,
)
from planboard.models.profiles import AgentProfile, BudgetPeriod, ProfileUsage
from planboard.models.sessions import AgentRun, ChatSession, Message
from planboard.models.plans import FINISHED_STATES, Plan, PlanEvent, PlanFork, State, SubTask
from planboard.models.tool_calls import Elicitation, InputRound, ToolCall
from planboard.models.files import WORKSPACE_PATH_MAX, WorkspaceFile
from planboard.models.inbox import (
    ActionLink,
    Channel,
    Decision,
    InboxSnooze,
    Notification,
    NotificationSettings,
)
from planboard.models.templates import PlanTemplate, Schedule, ScheduleOccurrence

# isort: on

__all__ = [
    "FINISHED_STATES",
    "MESSAGE_MAX",
    "NAME_MAX",
    "SUBTASKS_HARD_LIMIT",
    "TEXT_MAX",
    "TOOLSET_NAME_MAX",
    "TOOL_NAME_MAX",
    "WORKSPACE_PATH_MAX",
    "ActionLink",
    "AgentProfile",
    "AgentRun",
    "BudgetPeriod",
    "Channel",
    "ChatSession",
    "Decision",
    "Elicitation",
    "InboxSnooze",
    "InputRound",
    "Message",
    "Notification",
    "NotificationSettings",
    "Plan",
    "PlanEvent",
    "PlanFork",
    "PlanTemplate",
    "ProfileUsage",
    "Schedule",
    "ScheduleOccurrence",
    "SessionToolset",
    "State",
    "SubTask",
    "Team",
    "TeamMembership",
    "ToolCall",
    "Toolset",
    "ToolsetCredential",
    "ToolsetTool",
    "WorkspaceFile",
]
