"""The one write path for plans, sessions, messages and agent runs.

Every public function is keyword-only, named `<entity>_<action>`, and runs as one transaction:
lock the rows it changes (session first, then plan — see `_core`), validate, write, bump
`Plan.version`, append a `PlanEvent`, and broadcast the event on commit. Agent tools, the REST
API, the websocket and Django admin all call these through `planboard.services.<name>`;
nothing else writes plan models (a test checks it). Broken rules raise `PlanError` and change
nothing.

| module      | what it owns                                                        |
|-------------|---------------------------------------------------------------------|
| `_core`     | `Actor`, input cleaning, row locks in the one lock order, `_record`, |
|             | `plan_changes_recorded` (the versions a block's changes committed)   |
| `sessions`  | `session_create`, `session_update`                                  |
| `forks`     | `session_fork`: continue a plan from a version of its history       |
| `plans`     | `plan_create`, `plan_update_info`, `plan_finish`, `plan_change`,    |
|             | `plan_recover`                                                      |
| `subtasks`  | `subtask_add/update/delete/move`, `subtask_change` (several as one) |
| `subtask_states` | `subtask_set_state`, `subtask_finish` (one in progress, order rule) |
| `profiles`  | `profile_create/update/delete` (agent profiles, staff only)          |
| `messages`  | `message_post` (a person writes: a run starts or resumes),          |
|             | `message_record_agent`, `messages_mark_seen`                        |
| `attachments` | `message_record_attachment`: resources attached to a message      |
| `runs`      | `run_*`: start, leases, status, finish, steps, cancel, hand-off;    |
|             | the helpers other services move a run with (`_requeue`, ...)        |
| `run_queue` | `run_admit_waiting` (per-user admission), `run_reclaim_expired_leases` |
|             | (the sweep that re-dispatches runs of dead workers)                 |
| `tokens`    | `token_issue/revoke/expire_if_stale`: API tokens and their lifetime  |
| `usage`     | `profile_usage_add`: a person's spending per profile and day         |
| `toolsets`  | `toolset_create/update/delete` (MCP servers, their tools' policies), |
|             | `session_set_toolsets`                                              |
| `toolset_fields` | `clean_toolset`, `TOOLSET_FIELDS`: what a toolset's fields may hold, |
|             | who may set up a program (stdio) toolset                            |
| `toolset_discovery` | `toolset_refresh_tools/discover` (a server's tool list stored), |
|             | `toolset_prompt_get` (a server's prompt, for the composer)          |
| `toolset_credentials` | `toolset_credential_set/delete`, `toolset_oauth_*` (connected |
|             | accounts' tokens), `toolset_rotate_secrets`                         |
| `tool_calls` | `tool_call_*` (records, approve/deny), `run_pause_for_approval`     |
| `tool_call_tasks` | `tool_call_task_record`/`_abandon`: a call run as an MCP task     |
| `workspace` | `workspace_file_write/delete` (session files), the built-in toolset  |
| `elicitations` | `elicitation_open/answer/close`: MCP servers' questions to people |
| `input_rounds` | `tool_call_await_input/resume_input`, `input_rounds_expire`: calls |
|             | parked on a 2026-07-28 server's `input_required` answer              |
| `inbox`     | `inbox_snooze`, `tool_calls_approve_same`, answerers and consent to be named |
| `notifications` | notification settings, the outbox (claim/finish)                   |
| `action_links`  | signed action links: made with a notification, used, expired      |
| `templates` | `template_create(_from_plan)/update/delete`, `session_start_from_template` |
| `schedules` | `schedule_create/update/pause/resume/delete`, `schedule_rule_clean`     |
| `schedule_firing` | `schedules_sweep` (settle ended runs, fire what is due), its parts |
| `secret_rotation` | `*_rotate_secrets` of webhooks and waiting questions (`rotate_secrets`) |
"""

from planboard.services._core import (
    PLAN_TEXT_FIELDS,
    SUBTASK_TEXT_FIELDS,
    Actor,
    TextChanges,
    plan_changes_recorded,
)
from planboard.services.action_links import (
    action_link_find,
    action_link_preview,
    action_link_use,
    action_links_expire,
)
from planboard.services.attachments import message_record_attachment
from planboard.services.elicitations import (
    elicitation_answer,
    elicitation_close,
    elicitation_open,
)
from planboard.services.forks import session_fork
from planboard.services.inbox import (
    answerer_consent_set,
    inbox_snooze,
    session_set_answerers,
    tool_calls_approve_same,
)
from planboard.services.input_rounds import (
    input_rounds_expire,
    tool_call_await_input,
    tool_call_resume_input,
)
from planboard.services.messages import (
    message_post,
    message_record_agent,
    messages_mark_seen,
)
from planboard.services.notifications import (
    Claimed,
    notification_claim,
    notification_finish,
    notification_settings_update,
    notifications_due,
)
from planboard.services.plans import (
    plan_change,
    plan_create,
    plan_events_mark_seen,
    plan_finish,
    plan_recover,
    plan_update_info,
)
from planboard.services.profiles import (
    PROFILE_FIELDS,
    profile_create,
    profile_delete,
    profile_update,
)
from planboard.services.run_queue import run_admit_waiting, run_reclaim_expired_leases
from planboard.services.runs import (
    RunStopFlags,
    run_cancel,
    run_finish,
    run_hand_off,
    run_record_step,
    run_renew_lease,
    run_renew_leases,
    run_start,
)
from planboard.services.schedule_firing import (
    SweepReport,
    schedules_fire_due,
    schedules_settle,
    schedules_sweep,
)
from planboard.services.schedules import (
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_rule_clean,
    schedule_update,
)
from planboard.services.secret_rotation import (
    input_rounds_rotate_secrets,
    notification_settings_rotate_secrets,
)
from planboard.services.sessions import session_create, session_update
from planboard.services.subtask_states import subtask_finish, subtask_set_state
from planboard.services.subtasks import (
    subtask_add,
    subtask_change,
    subtask_delete,
    subtask_move,
    subtask_update,
)
from planboard.services.templates import (
    TEMPLATE_FIELDS,
    StartedFromTemplate,
    session_start_from_template,
    template_create,
    template_create_from_plan,
    template_delete,
    template_update,
)
from planboard.services.tokens import (
    token_expire_if_stale,
    token_is_expired,
    token_issue,
    token_revoke,
    token_ttl,
)
from planboard.services.tool_call_tasks import tool_call_task_abandon, tool_call_task_record
from planboard.services.tool_calls import (
    run_pause_for_approval,
    tool_call_answer,
    tool_call_claim,
    tool_call_decide,
    tool_call_expire,
    tool_call_open,
)
from planboard.services.toolset_credentials import (
    toolset_credential_delete,
    toolset_credential_set,
    toolset_oauth_connect,
    toolset_oauth_connectable,
    toolset_oauth_register,
    toolset_oauth_tokens_store,
    toolset_rotate_secrets,
)
from planboard.services.toolset_discovery import (
    toolset_discover,
    toolset_prompt_get,
    toolset_refresh_tools,
)
from planboard.services.toolset_fields import TOOLSET_FIELDS
from planboard.services.toolsets import (
    session_set_toolsets,
    toolset_create,
    toolset_delete,
    toolset_update,
)
from planboard.services.usage import profile_usage_add
from planboard.services.workspace import (
    toolset_ensure_workspace,
    workspace_file_delete,
    workspace_file_store,
    workspace_file_write,
)

__all__ = [
    "PLAN_TEXT_FIELDS",
    "PROFILE_FIELDS",
    "SUBTASK_TEXT_FIELDS",
    "TEMPLATE_FIELDS",
    "TOOLSET_FIELDS",
    "Actor",
    "Claimed",
    "RunStopFlags",
    "StartedFromTemplate",
    "SweepReport",
    "TextChanges",
    "action_link_find",
    "action_link_preview",
    "action_link_use",
    "action_links_expire",
    "answerer_consent_set",
    "elicitation_answer",
    "elicitation_close",
    "elicitation_open",
    "inbox_snooze",
    "input_rounds_expire",
    "input_rounds_rotate_secrets",
    "message_post",
    "message_record_agent",
    "message_record_attachment",
    "messages_mark_seen",
    "notification_claim",
    "notification_finish",
    "notification_settings_rotate_secrets",
    "notification_settings_update",
    "notifications_due",
    "plan_change",
    "plan_changes_recorded",
    "plan_create",
    "plan_events_mark_seen",
    "plan_finish",
    "plan_recover",
    "plan_update_info",
    "profile_create",
    "profile_delete",
    "profile_update",
    "profile_usage_add",
    "run_admit_waiting",
    "run_cancel",
    "run_finish",
    "run_hand_off",
    "run_pause_for_approval",
    "run_reclaim_expired_leases",
    "run_record_step",
    "run_renew_lease",
    "run_renew_leases",
    "run_start",
    "schedule_create",
    "schedule_delete",
    "schedule_pause",
    "schedule_resume",
    "schedule_rule_clean",
    "schedule_update",
    "schedules_fire_due",
    "schedules_settle",
    "schedules_sweep",
    "session_create",
    "session_fork",
    "session_set_answerers",
    "session_set_toolsets",
    "session_start_from_template",
    "session_update",
    "subtask_add",
    "subtask_change",
    "subtask_delete",
    "subtask_finish",
    "subtask_move",
    "subtask_set_state",
    "subtask_update",
    "template_create",
    "template_create_from_plan",
    "template_delete",
    "template_update",
    "token_expire_if_stale",
    "token_is_expired",
    "token_issue",
    "token_revoke",
    "token_ttl",
    "tool_call_answer",
    "tool_call_await_input",
    "tool_call_claim",
    "tool_call_decide",
    "tool_call_expire",
    "tool_call_open",
    "tool_call_resume_input",
    "tool_call_task_abandon",
    "tool_call_task_record",
    "tool_calls_approve_same",
    "toolset_create",
    "toolset_credential_delete",
    "toolset_credential_set",
    "toolset_delete",
    "toolset_discover",
    "toolset_ensure_workspace",
    "toolset_oauth_connect",
    "toolset_oauth_connectable",
    "toolset_oauth_register",
    "toolset_oauth_tokens_store",
    "toolset_prompt_get",
    "toolset_refresh_tools",
    "toolset_rotate_secrets",
    "toolset_update",
    "workspace_file_delete",
    "workspace_file_store",
    "workspace_file_write",
]
