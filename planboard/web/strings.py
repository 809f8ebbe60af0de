"""Every string the browser code shows, translated on the server.

The pages embed `js_strings()` with `json_script`; frontend/js/i18n.js looks keys up and fills
`{placeholders}`. Keeping them here lets `makemessages` find them like any other string.
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

STRINGS: dict[str, str | Promise] = {
    # States (plan and subtask)
    "state_todo": _("To do"),
    "state_in_progress": _("In progress"),
    "state_done": _("Done"),
    "state_abandoned": _("Abandoned"),
    # Board
    "no_plan": _(
        "No plan yet. Ask the agent for something that takes several steps; its plan will "
        "appear here, and you can change it at any time."
    ),
    "no_plan_read_only": _("This session has no plan yet."),
    "column_empty": _("Nothing here"),
    "plan_actions": _("Plan actions"),
    "add_subtask": _("Add subtask"),
    "edit_plan": _("Edit plan"),
    "finish_plan": _("Finish plan"),
    "abandon_plan": _("Abandon plan"),
    "plan_name": _("Plan name"),
    "subtask_name": _("Name"),
    "new_subtask_name": _("What needs doing?"),
    "description": _("Description"),
    "expected_outcome": _("Expected outcome"),
    "expected": _("Expected"),
    "outcome": _("Outcome"),
    "position": _("Position"),
    "position_end": _("At the end"),
    "position_before": _("Before #{index} · {name}"),
    "progress": _("Progress"),
    "progress_done": _("{done}/{total} done"),
    "plan_meta": _("v{version} · {owner}"),
    "plan_done_notice": _("This plan is done and kept in history."),
    "plan_abandoned_notice": _("This plan was abandoned and is kept in history."),
    "open_in_history": _("Open in history"),
    "card_actions": _("Actions"),
    "start": _("Start"),
    "finish": _("Finish"),
    "abandon": _("Abandon"),
    "back_to_todo": _("Back to To do"),
    "move_up": _("Move up"),
    "move_down": _("Move down"),
    "edit": _("Edit"),
    "delete": _("Delete"),
    "add": _("Add"),
    "save": _("Save"),
    "cancel": _("Cancel"),
    "close": _("Close"),
    "undo": _("Undo"),
    "deleted_subtask": _("Deleted “{name}”."),
    "mark_done": _("Mark done"),
    "finish_subtask_title": _("Finish “{name}”"),
    "finish_subtask_expected": _("Expected: {expected}"),
    "finish_plan_title": _("Finish this plan?"),
    "finish_plan_text": _("The plan moves to history. Say briefly what came of it."),
    "abandon_plan_title": _("Abandon this plan?"),
    "abandon_plan_text": _("The plan moves to history as abandoned."),
    "abandon_reason": _("Why is it abandoned?"),
    # Chat and the agent's run
    "conversation": _("Conversation"),
    "chat_empty": _(
        "Tell the agent what you want to get done. For bigger jobs it drafts a plan first."
    ),
    "read_only_chat": _("You are watching this session; only its owner can write here."),
    "answer_only_chat": _(
        "You were named to answer this session: you can write here when it waits for an "
        "answer. Its owner starts and steers its work."
    ),
    "message_placeholder": _("Message the agent… (Enter sends, Shift+Enter for a new line)"),
    "message_label": _("Message to the agent"),
    "send": _("Send"),
    "you": _("You"),
    "agent": _("Agent"),
    "tool": _("tool"),
    "tool_running": _("running…"),
    "stop": _("Stop"),
    "start_plan": _("Start plan"),
    "untitled_session": _("Untitled session"),
    "run_idle": _("Agent idle"),
    "run_queued": _("Queued"),
    # A run waiting for a free place among its owner's runs in flight (N-th in line).
    "run_queue_position": _("Queued, position {position}"),
    "run_running": _("Agent working…"),
    "run_waiting_for_user": _("Waiting for your go-ahead"),
    "run_waiting_for_approval": _("Waiting for a tool call to be approved"),
    "run_succeeded": _("Agent finished"),
    "run_failed": _("Agent failed"),
    "run_cancelled": _("Stopped"),
    "run_stopping": _("Stopping…"),
    "run_step": _("step {step}"),
    "confirm_title": _("Start this plan?"),
    "confirm_text": _(
        "The agent drafted a plan and waits for your go-ahead. You can change the plan on the "
        "board first."
    ),
    "confirm_yes": _("Yes, start"),
    "confirm_keep_editing": _("Keep editing"),
    # Sent to the agent as the user's message when they press "Yes, start".
    "go_ahead_message": _("Yes, go ahead."),
    # Connection indicator
    "live_connecting": _("Connecting…"),
    "live_live": _("Live"),
    "live_reconnecting": _("Reconnecting…"),
    "live_paused": _("Offline"),
    "live_connecting_help": _("Connecting to live updates."),
    "live_live_help": _("Changes by the agent and other people appear as they happen."),
    "live_reconnecting_help": _(
        "Live updates are paused; the board catches up as soon as the connection is back."
    ),
    "live_paused_help": _("Live updates are paused."),
    "live_refused": _("Not connected"),
    "live_refused_help": _(
        "The server refused live updates for this page; reload it or sign in again."
    ),
    # Errors
    "err_network": _("The server could not be reached. Check your connection and try again."),
    "err_forbidden": _("You may not change this."),
    "err_not_found": _("It no longer exists; someone may have deleted it."),
    "err_stale_version": _(
        "The plan changed while you were working on it; the board now shows the latest version. "
        "Please try again."
    ),
    "err_one_in_progress": _(
        "Another subtask is already in progress. Finish it or move it back to To do first."
    ),
    "err_plan_finished": _("This plan is finished; it can no longer be changed."),
    "err_subtask_limit": _("The plan already has as many subtasks as this session allows."),
    # History replay
    "replay_first": _("First step"),
    "replay_prev": _("Previous step"),
    "replay_next": _("Next step"),
    "replay_last": _("Final board"),
    "replay_play": _("Play"),
    "replay_pause": _("Pause"),
    "replay_position": _("Replay position"),
    "replay_step": _("Step {step} of {total}"),
    "replay_final": _("Final board"),
    "replay_after": _("The board at version {version} of {total}"),
    "replay_start": _("Before the plan existed"),
    "replay_window_start": _("The board after {count} earlier changes"),
    "replay_load_all": _("Show the {count} earlier changes"),
    "load_earlier_messages": _("Load earlier messages"),
    "agent_writing": _("writing…"),
    "cost": _("{cost} · {tokens} tokens"),
    "run_usage": _("This run: {usage}"),
    "plan_usage": _("This plan: {usage}"),
    "name_required": _("A name is needed: it is what the board shows."),
    "notify_saved": _("Notification settings saved."),
    "notify_secret": _(
        "Your webhook's signing secret (shown only now; keep it with the receiver): {secret}"
    ),
    "answerers_only_owner": _("only you"),
    "answerers_title": _("Who may answer"),
    "answerers_help": _(
        "These people see this session and may approve its tool calls, confirm its plans and "
        "answer its questions; starting its work stays yours. Each person chooses who may "
        "name them. Separate usernames with commas."
    ),
    "consent_saved": _("Saved: who may name you to answer their sessions."),
    "answerers_label": _("Usernames"),
    # The message box's prompts and attached resources (MCP)
    "prompts": _("Prompts"),
    "prompts_none": _("The session's toolsets offer no prompts."),
    "prompt_use": _("Put in the message box"),
    "prompt_arguments_help": _("A prompt of {toolset}: fill in what it asks for."),
    "prompt_failed": _("Could not get the prompt {name}: {reason}"),
    "attach_resource": _("Attach"),
    "resources_none": _("The session's toolsets offer no resources."),
    "attached": _("Attached resources"),
    "attachment_remove": _("Remove {name}"),
    "attachment_read": _("Attached from {toolset}: {name}"),
    "attachment_unread": _("Attached from {toolset}, not read: {name}"),
    "tools_title": _("Tools for this session"),
    "tools_help": _(
        "Tick the toolsets the agent may use here. Some act as you: connect your own account or "
        "key before the agent can use them."
    ),
    "tools_none": _("No toolsets are available to you yet; staff add them."),
    "tools_count": _("{count} tools"),
    "tools_saved": _("The session's tools are saved."),
    "tools_shared": _("shared"),
    "tools_shared_not_connected": _("not connected yet (staff connect it)"),
    "tools_connected": _("connected as you"),
    "tools_not_connected": _("not connected"),
    "tools_connect": _("Connect"),
    "tools_reconnect": _("Reconnect"),
    "tools_set_key": _("Set my key"),
    "tools_set_key_title": _("Your key for {name}"),
    "tools_set_key_env": _(
        "One NAME=value per line; the server is started with them when the agent calls it for you."
    ),
    "tools_set_key_headers": _(
        "One header per line, as Name: value; they are sent when the agent calls it for you."
    ),
    "tools_set_key_label": _("Values (stored encrypted, never shown again)"),
    "tools_set_key_empty": _("Nothing was given: write NAME=value or Name: value lines."),
    "tools_key_saved": _("Your key for {name} is saved."),
    "agent_profile": _("Agent profile"),
    "agent_profile_default": _("the session's default"),
    "agent_profile_chip": _("Done by the agent profile {name}"),
    "edit_pending": _("not seen by the agent yet"),
    "edit_pending_help": _("The agent gets this change in the hint of its next step."),
    "edit_seen": _("seen by the agent"),
    "edit_seen_help": _("The agent received this change in a hint."),
    "plan_mode": _("Plan mode"),
    "plan_mode_help": _("On: the agent plans on the board. Off: a plain chat with tools."),
    "plan_mode_on": _("Plan mode is on."),
    "plan_mode_off": _("Plan mode is off: the agent answers without a plan."),
    "run_budget_paused": _("Paused at the spending limit"),
    "files_title": _("Files the agent produced ({count})"),
    "size_bytes": _("{n} bytes"),
    "size_kb": _("{n} KB"),
    "ev_not_seen": _("not yet seen by the agent"),
    "ev_seen": _("seen by the agent at its next step"),
    "ev_seen_after": _("seen by the agent after {steps} more steps"),
    "approval_title": _("The agent wants to run a tool:"),
    "approval_read_only": _("Waiting for the session's owner to approve or deny it."),
    "approval_note": _("Note to the agent (optional)"),
    "approval_always": _("Always allow this tool in this session"),
    "approve": _("Approve"),
    "elicit_title": _("The tool {tool} asks you:"),
    "run_waiting_answer": _("A tool waits for your answer"),
    "elicit_url_note": _("It asks you to open this page (in a new tab):"),
    "elicit_required": _("required"),
    "elicit_expires": _("Unanswered by {when}, the tool is told you declined."),
    "elicit_read_only": _("Waiting for the session's owner to answer it."),
    "elicit_accept": _("Send"),
    "elicit_opened": _("Done, I opened it"),
    "elicit_decline": _("Decline"),
    "elicit_cancel": _("Cancel"),
    "deny": _("Deny"),
    "tool_status_pending": _("waiting for approval"),
    "tool_status_approved": _("approved"),
    "tool_status_denied": _("denied"),
    "tool_status_running": _("running"),
    # How far a running tool has got, as its server says (progress of a known total).
    "tool_progress_of": _("{done} of {total}"),
    "tool_status_succeeded": _("done"),
    "tool_status_failed": _("failed"),
    "tool_status_interrupted": _("interrupted"),
    "replay_empty": _("Before its first change the plan was empty."),
    "replay_broken": _("Part of this plan's history is missing; showing the final board only."),
    "actor_agent": _("Agent"),
    "actor_system": _("System"),
    "actor_person": pgettext_lazy("someone", "Person"),
    "field_name": _("name"),
    "field_description": _("description"),
    "field_expected_outcome": _("expected outcome"),
    "field_outcome": _("outcome"),
    "field_subtasks": _("subtasks"),
    "ev_plan_created": _("created the plan “{name}” with {count} subtasks"),
    "ev_plan_updated": _("edited the plan: {fields}"),
    "ev_plan_finished": _("finished the plan as {state}"),
    "ev_plan_abandoned": _("abandoned the plan"),
    "ev_plan_reopened": _("reopened the plan"),
    "ev_subtask_added": _("added “{name}” at #{index}"),
    "ev_subtask_updated": _("edited “{name}”: {fields}"),
    "ev_subtask_deleted": _("deleted “{name}”"),
    "ev_subtask_moved": _("moved “{name}” from #{from} to #{to}"),
    "ev_subtask_state_changed": _("set “{name}” to {state}"),
    "ev_subtask_finished": _("finished “{name}”"),
    "ev_subtask_finished_next": _("finished “{name}” and started “{next}”"),
    "ev_unknown": _("changed the plan ({action})"),
    # Inbox
    "inbox_empty": _("Nothing waits on you. Runs that need you will show up here at once."),
    "inbox_kind_approval": _("Tool approval"),
    "inbox_kind_confirmation": _("Plan to confirm"),
    "inbox_kind_budget": _("Spending limit"),
    "inbox_kind_question": _("Question"),
    "inbox_kind_elicitation": _("A tool asks"),
    "inbox_confirm_plan": _("The agent drafted “{name}” and waits for your go-ahead."),
    "inbox_budget": _("Spent {spent} of {limit} and {tokens} of {token_limit} tokens."),
    "inbox_always_allow": _("Always allow"),
    "inbox_raise_budget": _("Raise the limit"),
    "inbox_new_limit": _("New limit in US dollars"),
    "inbox_bad_amount": _("Enter an amount of 0 or more."),
    "inbox_reply": _("Reply"),
    "inbox_snooze": _("Not now"),
    "inbox_unsnooze": _("Show again"),
    "inbox_identical": _("{count} identical requests of {tool}"),
    "inbox_approve_all": _("Approve all {count}"),
    # Decisions in the review timeline: who answered, what, through which channel
    "decision_nobody": _("Nobody"),
    "decision_approve": _("approved {summary}"),
    "decision_deny": _("denied {summary}"),
    "decision_always_allow": _("always allowed {summary}"),
    "decision_confirm": _("confirmed the plan"),
    "decision_raise_budget": _("raised the spending limit ({summary})"),
    "decision_reply": _("answered the agent"),
    "decision_accept": _("answered a tool's question ({summary})"),
    "decision_decline": _("declined a tool's question ({summary})"),
    "decision_cancel": _("cancelled a tool's question ({summary})"),
    "channel_browser": _("in the browser"),
    "channel_api": _("through the API"),
    "channel_email": _("by an email link"),
    "channel_webhook": _("by a webhook link"),
    "channel_expiry": _("the link expired"),
    "channel_admin": _("in the admin"),
}


def js_strings() -> dict[str, str]:
    """The strings in the language active for this request."""
    return {key: str(value) for key, value in STRINGS.items()}
