// Plain-language lines for plan events: who did what, for the history timeline.

import { stateLabel } from "./board-card.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */

/** @param {import("./types.js").EventActor | null} actor */
export function actorLabel(actor) {
  if (!actor || actor.kind === "system") return t("actor_system");
  if (actor.kind === "agent") return t("actor_agent");
  return actor.username || t("actor_person");
}

/** @param {PlanEvent} event @param {PlanSnapshot} before @param {PlanSnapshot} after */
function subtaskName(event, before, after) {
  /** @param {PlanSnapshot} plan */
  const find = (plan) => plan && plan.subtasks.find((subtask) => subtask.id === event.subtask_id);
  const found = find(before) || find(after);
  if (found) return found.name;
  return event.before?.name || event.after?.name || `#${event.subtask_id}`;
}

/** A plan position as people count it (from 1); "?" when unknown. */
function shown(index) {
  return typeof index === "number" ? index + 1 : "?";
}

/**
 * Subtask ids as people number the cards (from 1) in `plan`, or "nothing".
 * @param {number[] | undefined} ids
 * @param {PlanSnapshot} plan
 */
function numbers(ids, plan) {
  const found = (plan ? plan.subtasks : []).filter((s) => (ids || []).includes(s.id));
  return found.length ? found.map((s) => `#${s.index + 1}`).join(", ") : t("blocked_by_none");
}

function fieldList(changes) {
  return Object.keys(changes || {})
    .filter((key) => key !== "index")
    .map((key) => t(`field_${key}`))
    .join(", ");
}

/**
 * One sentence for `event`, given the plan just before and just after it.
 * @param {PlanEvent} event
 * @param {PlanSnapshot} before
 * @param {PlanSnapshot} after
 */
export function describeEvent(event, before, after) {
  const name = () => subtaskName(event, before, after);
  const data = event.after || {};
  switch (event.action) {
    case "plan_created":
      return t("ev_plan_created", { name: data.name || after.name, count: after.subtasks.length });
    case "plan_updated":
      return t("ev_plan_updated", { fields: fieldList(data) });
    case "plan_finished":
      return t("ev_plan_finished", { state: stateLabel(data.state || after.state) });
    case "plan_abandoned":
      return t("ev_plan_abandoned");
    case "plan_reopened":
      return t("ev_plan_reopened");
    case "plan_forked": {
      const source = data.source || {};
      const version = source.version ?? "?";
      return t("ev_plan_forked", { name: source.name || after.name, version });
    }
    case "subtask_added":
      return t("ev_subtask_added", { name: name(), index: shown(data.index) });
    case "subtask_updated":
      if (fieldList(data) === t("field_blocked_by")) {
        return t("ev_subtask_blockers", { name: name(), blockers: numbers(data.blocked_by, after) });
      }
      return t("ev_subtask_updated", { name: name(), fields: fieldList(data) });
    case "subtask_deleted":
      return t("ev_subtask_deleted", { name: name() });
    case "subtask_moved":
      return t("ev_subtask_moved", {
        name: name(),
        from: shown(event.before ? event.before.index : null),
        to: shown(data.index),
      });
    case "subtask_state_changed":
      return t("ev_subtask_state_changed", { name: name(), state: stateLabel(data.state) });
    case "subtask_finished": {
      const next = data.started_next;
      if (next !== null && next !== undefined && after.subtasks[next]) {
        return t("ev_subtask_finished_next", { name: name(), next: after.subtasks[next].name });
      }
      return t("ev_subtask_finished", { name: name() });
    }
    default:
      return t("ev_unknown", { action: event.action });
  }
}

/**
 * A second line worth showing (an outcome), or "".
 * @param {PlanEvent} event
 */
export function eventDetail(event) {
  const data = event.after || {};
  if (["subtask_finished", "plan_finished", "plan_abandoned"].includes(event.action)) {
    return data.outcome || "";
  }
  if (event.action === "subtask_state_changed" && data.state === "done") return data.outcome || "";
  return "";
}

/**
 * For a change a person made: whether, and how soon, the agent received it in a hint
 * ("" for the agent's own changes and system events).
 * @param {PlanEvent} event
 */
export function seenDetail(event) {
  if (!event.actor || event.actor.kind !== "user") return "";
  if (!event.seen) return t("ev_not_seen");
  const waited = event.seen.after_steps || 0;
  return waited ? t("ev_seen_after", { steps: waited }) : t("ev_seen");
}
