// What the board says about the agent beside the plan itself: what it spent (the plan's and
// each subtask's cost, and on the session page the whole session's, from snapshots and
// `plan.usage` events) and whether it has seen a
// person's edit (pending until a hint carries it, then "seen" for a moment). The board,
// the list and the detail panel read these marks; any change re-renders the board.

import { h } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").PlanUsage} PlanUsage */
/** @typedef {{cost_usd: number, tokens: number}} Spent */

// How long a card says "seen by the agent" after the agent received a person's edit.
const SEEN_MS = 15000;

export class AgentMarks {
  /** @param {() => void} changed re-render whatever shows the marks */
  constructor(changed) {
    this.changed = changed;
    /** @type {PlanUsage | null} */
    this.usage = null;
    /** @type {Spent | null} every run of the session (the session page only) */
    this.sessionSpent = null;
    /** @type {Map<number | string, string>} subtask id (or "plan") -> "pending" | "seen" */
    this.edits = new Map();
    this.seenTimers = new Map();
    /** @type {Map<number, number>} plan id -> the latest version a hint carried to the agent */
    this.seenUpTo = new Map();
  }

  /**
   * Costs of the plan and its subtasks, all of them (snapshots).
   * @param {PlanUsage | null | undefined} usage
   */
  setUsage(usage) {
    this.usage = usage || null;
    this.changed();
  }

  /**
   * What the whole session spent (its snapshot's `spent_usd` and `spent_tokens`).
   * @param {Spent | null} spent
   */
  setSessionSpent(spent) {
    this.sessionSpent = spent;
    this.changed();
  }

  /**
   * New totals after an agent step (`plan.usage` events): the plan's, those of the subtask
   * the step was spent on (the other subtasks' are as they were) and the session's.
   * @param {PlanUsage & {session?: Spent}} usage
   */
  addUsage(usage) {
    const { session, ...plan } = usage;
    if (session) this.sessionSpent = session;
    const known = this.usage && this.usage.plan_id === plan.plan_id ? this.usage.subtasks : {};
    this.setUsage({ ...plan, subtasks: { ...known, ...plan.subtasks } });
  }

  /** What the agent spent on a subtask, or null. @param {number} subtaskId */
  spentOn(subtaskId) {
    const spent = this.usage && this.usage.subtasks && this.usage.subtasks[String(subtaskId)];
    return spent && (spent.tokens || spent.cost_usd)
      ? { cost: Number(spent.cost_usd || 0), tokens: Number(spent.tokens || 0) }
      : null;
  }

  /**
   * People's edits the agent has not received yet (snapshot `unseen_edits`).
   * @param {{version: number, subtask_id: number | null, action: string}[] | undefined} edits
   */
  setUnseen(edits) {
    for (const [key, mark] of [...this.edits]) if (mark === "pending") this.edits.delete(key);
    for (const edit of edits || []) this.edits.set(edit.subtask_id ?? "plan", "pending");
    this.changed();
  }

  /**
   * A person's change just committed: pending until a hint shows it to the agent. Whether the
   * board already shows the change (a REST answer can arrive before its event) does not
   * matter; a change a hint has already carried stays seen. Returns whether a mark changed.
   * @param {PlanEvent} event
   */
  markPending(event) {
    if (!event.actor || event.actor.kind !== "user" || event.seen) return false;
    if (event.version <= (this.seenUpTo.get(event.plan_id) ?? 0)) return false;
    const key = event.subtask_id ?? "plan";
    if (this.edits.get(key) === "pending") return false;
    this.edits.set(key, "pending");
    return true;
  }

  /**
   * The agent received these edits of plan `planId` in a hint (`plan.seen`).
   * @param {number} planId
   * @param {{version: number, subtask_id: number | null}[]} seen
   */
  markSeen(planId, seen) {
    for (const item of seen || []) {
      const key = item.subtask_id ?? "plan";
      this.seenUpTo.set(planId, Math.max(this.seenUpTo.get(planId) ?? 0, item.version));
      this.edits.set(key, "seen");
      clearTimeout(this.seenTimers.get(key));
      this.seenTimers.set(
        key,
        setTimeout(() => {
          if (this.edits.get(key) === "seen") this.edits.delete(key);
          this.changed();
        }, SEEN_MS),
      );
    }
    this.changed();
  }

  /**
   * Whether the agent saw a person's edit, as a chip; `short` for a card's badge line.
   * @param {number | string} key a subtask id, or "plan"
   * @param {{short?: boolean}} [options]
   */
  editMark(key, { short = false } = {}) {
    const mark = this.edits.get(key);
    if (!mark) return null;
    const text = mark === "pending" ? "edit_pending" : "edit_seen";
    return h("span", {
      class: `chip chip-${mark}`,
      dataset: { edit: mark },
      text: t(short ? `${text}_short` : text),
      title: t(mark === "pending" ? "edit_pending_help" : "edit_seen_help"),
    });
  }
}
