"""The one home for reads: snapshots, history, transcripts, and who may see what.

Views, consumers, the admin, the agent loop and the tools read through these; callers use
`planboard.selectors.<name>`.

| module     | what it answers                                                          |
|------------|--------------------------------------------------------------------------|
| `access`   | who may: visibility, `can_change_plan`, `can_act_in_session`, `staff_may`… |
| `plans`    | `plan_snapshot`, `plan_events_since`, history search (`plans_matching`)  |
| `sessions` | `session_snapshot`, `session_messages`, runs, the session list           |
| `toolsets` | toolsets people may use, a session's external tools, its tool-call record |
| `workspace` | a session's files (`session_files`) and one file's bytes                |

The plan tool call's hottest reads (session with plan, plan, subtasks) run `planboard.sql`'s
statements; everything else is the ORM.
"""

from planboard.selectors.access import (
    RUN_STDIO_TOOLSET,
    can_act_in_session,
    can_change_plan,
    can_change_subtasks,
    can_decide_tool_calls,
    can_edit_board,
    may_run_programs,
    owner_choices,
    permission,
    plans_visible_to,
    sees_all_teams,
    sees_profile_configuration,
    sees_toolset_configuration,
    sessions_visible_to,
    staff_may,
    staff_may_view,
    team_choices,
)
from planboard.selectors.plans import (
    STATE_FILTER_ALL,
    STATE_FILTER_FINISHED,
    filter_history,
    historical_plans,
    latest_plan_id,
    plan_events_since,
    plan_events_window,
    plan_row,
    plan_snapshot,
    plan_snapshot_at,
    plan_snapshot_of,
    plan_unseen_edits,
    plan_usage,
    plans_matching,
    plans_of_team,
)
from planboard.selectors.runs import (
    run_queue_position,
    run_shown,
    runs_in_flight,
    users_with_waiting_runs,
)
from planboard.selectors.sessions import (
    agent_run,
    latest_run,
    latest_runs_by_session,
    runs_cancel_requested,
    session_messages,
    session_snapshot,
    session_with_plan,
    sessions_for_list,
    transcript_since,
)
from planboard.selectors.toolsets import (
    pending_tool_calls,
    session_tool_calls,
    session_tools,
    session_tools_and_call_flags,
    session_toolset_ids,
    tool_always_allowed,
    toolset_as_called,
    toolset_data,
    toolset_rows,
    toolsets_usable_by,
    toolsets_visible_to,
)
from planboard.selectors.workspace import (
    session_files,
    workspace_file,
    workspace_file_bytes,
    workspace_file_open,
)

__all__ = [
    "RUN_STDIO_TOOLSET",
    "STATE_FILTER_ALL",
    "STATE_FILTER_FINISHED",
    "agent_run",
    "can_act_in_session",
    "can_change_plan",
    "can_change_subtasks",
    "can_decide_tool_calls",
    "can_edit_board",
    "filter_history",
    "historical_plans",
    "latest_plan_id",
    "latest_run",
    "latest_runs_by_session",
    "may_run_programs",
    "owner_choices",
    "pending_tool_calls",
    "permission",
    "plan_events_since",
    "plan_events_window",
    "plan_row",
    "plan_snapshot",
    "plan_snapshot_at",
    "plan_snapshot_of",
    "plan_unseen_edits",
    "plan_usage",
    "plans_matching",
    "plans_of_team",
    "plans_visible_to",
    "run_queue_position",
    "run_shown",
    "runs_cancel_requested",
    "runs_in_flight",
    "sees_all_teams",
    "sees_profile_configuration",
    "sees_toolset_configuration",
    "session_files",
    "session_messages",
    "session_snapshot",
    "session_tool_calls",
    "session_tools",
    "session_tools_and_call_flags",
    "session_toolset_ids",
    "session_with_plan",
    "sessions_for_list",
    "sessions_visible_to",
    "staff_may",
    "staff_may_view",
    "team_choices",
    "tool_always_allowed",
    "toolset_as_called",
    "toolset_data",
    "toolset_rows",
    "toolsets_usable_by",
    "toolsets_visible_to",
    "transcript_since",
    "users_with_waiting_runs",
    "workspace_file",
    "workspace_file_bytes",
    "workspace_file_open",
]
