// The shapes the server sends, as JSDoc types for `tsc --checkJs` (make typecheck). They mirror
// the TypedDicts of planboard/shapes.py: change both together (docs/ARCHITECTURE.md). This
// module holds types only; other modules import them with `import("./types.js").Name`.

/**
 * @typedef {object} OwnerRef
 * @property {number} id
 * @property {string} username
 */

/**
 * @typedef {"todo" | "in_progress" | "done" | "abandoned"} PlanState
 */

/**
 * @typedef {object} SubtaskSnapshot
 * @property {number} id
 * @property {number} index
 * @property {string} name
 * @property {string} description
 * @property {string} expected_outcome
 * @property {string} outcome
 * @property {PlanState} state
 * @property {string | null} agent the agent profile named for it; null = the session's
 * @property {number[]} blocked_by ids of the subtasks of this plan it waits for; [] = none
 * @property {string | null} created_at
 * @property {string | null} finished_at
 */

/**
 * Everything about a plan except its subtasks (an event's `patch.plan`).
 * @typedef {object} PlanHeader
 * @property {number} id
 * @property {number | null} session_id
 * @property {OwnerRef | null} owner
 * @property {string} name
 * @property {string} description
 * @property {string} expected_outcome
 * @property {PlanState} state
 * @property {string} outcome
 * @property {number} version
 * @property {string | null} created_at
 * @property {string | null} finished_at
 */

/**
 * @typedef {PlanHeader & {subtasks: SubtaskSnapshot[]}} PlanSnapshot
 */

/**
 * @typedef {object} EventActor
 * @property {"user" | "agent" | "system"} kind
 * @property {number | null} run_id
 * @property {number | null} user_id
 * @property {string | null} username
 */

/**
 * Turns the snapshot at version N-1 into the one at N (board-state.js: applyEvent).
 * @typedef {object} PlanPatch
 * @property {PlanHeader} plan
 * @property {SubtaskSnapshot[]} upsert
 * @property {number[]} remove
 * @property {number[] | null} order the new order of every subtask id, or null: unchanged
 */

/**
 * When an agent first received a person's change in a hint.
 * @typedef {object} EventSeen
 * @property {string | null} at
 * @property {number | null} run_id
 * @property {number | null} step
 * @property {number | null} after_steps
 */

/**
 * @typedef {object} PlanEvent
 * @property {"plan.event"} type
 * @property {number} plan_id
 * @property {number | null} session_id
 * @property {number} version
 * @property {string} action
 * @property {EventActor} actor
 * @property {number | null} subtask_id
 * @property {Record<string, any> | null} before the changed fields before (keys by action)
 * @property {Record<string, any> | null} after
 * @property {PlanPatch} patch
 * @property {string | null} created_at
 * @property {EventSeen | null} seen
 */

/**
 * What a plan's work cost, in total and per subtask (subtask ids as keys).
 * @typedef {object} PlanUsage
 * @property {number} plan_id
 * @property {number} cost_usd
 * @property {number} tokens
 * @property {Record<string, {cost_usd: number, tokens: number}>} subtasks
 */

/**
 * An agent run as clients see it (planboard/shapes.py RunSnapshot).
 * @typedef {object} RunSnapshot
 * @property {number} id
 * @property {number} session_id
 * @property {string} status
 * @property {string} error
 * @property {string | null} pause_reason
 * @property {string} model
 * @property {boolean} cancel_requested
 * @property {number} step_count
 * @property {number} prompt_tokens
 * @property {number} completion_tokens
 * @property {string} cost_usd decimal as a string
 * @property {string | null} created_at
 * @property {string | null} started_at
 * @property {string | null} finished_at
 * @property {number | null} queue_position 1-based place among the owner's runs waiting for
 *   a free place (the per-user cap on runs in flight); null when it does not wait
 */

/**
 * What a session socket sends (docs/ARCHITECTURE.md, "Shapes that travel"). Shapes that are
 * not typed field by field yet are `Record<string, any>`.
 * @typedef {{type: "snapshot", session?: Record<string, any>, plan?: PlanSnapshot | null,
 *   run?: Record<string, any> | null, messages?: Record<string, any>[], can_edit: boolean}
 *   | PlanEvent
 *   | {type: "session.plan", session_id: number, plan_id: number | null}
 *   | {type: "session.message", message: Record<string, any>}
 *   | {type: "session.run", run: RunSnapshot}
 *   | {type: "session.updated", session: Record<string, any>, toolsets?: number[]}
 *   | {type: "session.tool_call", tool_call: Record<string, any>}
 *   | {type: "tool.progress", session_id: number, tool_call_id: string, progress: number,
 *      total: number | null, message: string | null}
 *   | {type: "session.elicitation", elicitation: Record<string, any>}
 *   | {type: "session.files", session_id: number, action: string, path: string,
 *      files: Record<string, any>[]}
 *   | PlanUsage & {type: "plan.usage", session_id: number | null,
 *      session?: {cost_usd: number, tokens: number}}
 *   | {type: "plan.seen", plan_id: number, session_id: number | null,
 *      seen: (EventSeen & {version: number, subtask_id: number | null})[]}
 *   | {type: "session.messages_seen", session_id: number, up_to: number,
 *      seen: {at: string | null, run_id: number | null, step: number | null}}
 *   | {type: "message.delta", session_id: number, run_id: number, answer_id: string,
 *      seq: number, text: string}
 *   | {type: "message.reset", session_id: number, run_id: number, answer_id: string}
 *   | {type: "error", code: string, error: string}
 *   | {type: "hello"}
 *   | {type: "inbox.changed", session_id: number}
 *   | {type: "session.schedule", session_id: number, schedule_id: number,
 *      schedule: Record<string, any> | null}
 *   | {type: "schedule.changed", schedule_id: number, template_id: number,
 *      schedule: Record<string, any> | null}
 *   | {type: "pong"}
 *   | {type: "presence", session_id: number, people: Person[], heartbeat_seconds: number}
 *   | {type: "presence.update", session_id: number, person: Person}
 *   | {type: "presence.left", session_id: number, key: string}} SocketMessage
 */

/**
 * One open session page (planboard/realtime/presence.py): whose, and the subtask whose edit
 * form is open there.
 * @typedef {{key: string, user_id: number, username: string, name: string,
 *   editing: number | null}} Person
 */

export {};

/**
 * One subtask of a plan template: text, profile and dependencies, never a state or outcome.
 * @typedef {object} TemplateSubtask
 * @property {string} name
 * @property {string} description
 * @property {string} expected_outcome
 * @property {string} agent the agent profile named for it; "" = the session's
 * @property {number[]} blocked_by 0-based positions, in the template's list, of the subtasks
 *   it waits for; [] = none
 */

/**
 * @typedef {object} TeamRef
 * @property {number} id
 * @property {string} name
 */

/**
 * A plan template (GET /api/templates/{id}/).
 * @typedef {object} TemplateSnapshot
 * @property {number} id
 * @property {OwnerRef} owner
 * @property {TeamRef | null} team the team it is shared with; null = its owner only
 * @property {string} name
 * @property {string} description
 * @property {string} expected_outcome
 * @property {TemplateSubtask[]} subtasks
 * @property {number | null} source_plan_id
 * @property {string | null} created_at
 * @property {string | null} updated_at
 */
