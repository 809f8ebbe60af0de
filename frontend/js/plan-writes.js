// People's changes to the plan on the session page, each sent over REST (the one write path):
// a card's state (asking for an outcome when it is done), its place, fields and removal
// (after a grace period with Undo), new cards, the plan's header, finishing the plan. The
// answer's snapshot is shown at once; the plan event that follows changes nothing more.

import { ApiError, api } from "./api.js";
import { isPlanSnapshot } from "./board-state.js";
import { askText } from "./dialog.js";
import { t } from "./i18n.js";
import { toast, toastError } from "./toast.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/**
 * What the writes need from the session page.
 * @typedef {object} WritingPage
 * @property {PlanSnapshot | null} plan
 * @property {import("./board.js").BoardView} board
 * @property {import("./live.js").LiveSocket} live
 * @property {Map<number | string, number>} ownChanges when this tab last changed what
 * @property {(snapshot: PlanSnapshot, options?: {highlight?: boolean}) => void} showSnapshot
 * @property {(planId: number) => Promise<void>} refreshPlan
 * @property {(planId?: number) => string} planUrl
 * @property {(subtaskId: number) => string} subtaskUrl
 */

// How long a deleted card can be brought back before the delete is sent.
const UNDO_MS = 6000;

export class PlanWrites {
  /** @param {WritingPage} page */
  constructor(page) {
    this.page = page;
    this.pendingDeletes = new Map(); // subtask id -> {commit, note}
  }

  async write(method, url, body, touched) {
    if (touched !== undefined) this.page.ownChanges.set(touched, Date.now());
    try {
      const data = await api(method, url, body);
      // Writes answer with the fresh snapshot ({plan: …}); showing it now saves a wait.
      const snapshot = data && isPlanSnapshot(data.plan) ? data.plan : data;
      if (isPlanSnapshot(snapshot) && this.page.plan && snapshot.id === this.page.plan.id) {
        this.page.showSnapshot(snapshot, { highlight: false });
      }
      // Without the socket nothing would show the change: fetch it.
      if (!this.page.live.isOpen() && this.page.plan) this.page.refreshPlan(this.page.plan.id);
      return true;
    } catch (error) {
      this.reportError(error);
      return false;
    }
  }

  reportError(error) {
    if (error instanceof ApiError && error.status === 409 && isPlanSnapshot(error.body.snapshot)) {
      this.page.showSnapshot(error.body.snapshot);
      toast(t("err_stale_version"), { kind: "warning" });
      return;
    }
    toastError(errorText(error));
  }

  async setState(subtask, state) {
    const body = { state };
    if (state === "done") {
      const outcome = await this.askOutcome(subtask);
      if (outcome === null) return false;
      if (outcome) body.outcome = outcome;
    }
    return this.write("PATCH", this.page.subtaskUrl(subtask.id), body, subtask.id);
  }

  askOutcome(subtask) {
    return askText({
      title: t("finish_subtask_title", { name: subtask.name }),
      message: subtask.expected_outcome
        ? t("finish_subtask_expected", { expected: subtask.expected_outcome })
        : "",
      label: t("outcome"),
      confirm: t("mark_done"),
    });
  }

  move(subtask, index) {
    // Positions depend on what this tab saw: a stale view is refused, not misapplied.
    return this.write(
      "PATCH",
      this.page.subtaskUrl(subtask.id),
      { index, expected_version: this.page.plan.version },
      subtask.id,
    );
  }

  async change(subtask, change) {
    const body = { ...change };
    if (change.state === "done") {
      const outcome = await this.askOutcome(subtask);
      if (outcome === null) return false;
      if (outcome) body.outcome = outcome;
    }
    if ("index" in change) body.expected_version = this.page.plan.version;
    return this.write("PATCH", this.page.subtaskUrl(subtask.id), body, subtask.id);
  }

  edit(subtask, fields) {
    return this.write("PATCH", this.page.subtaskUrl(subtask.id), fields, subtask.id);
  }

  add(fields, index) {
    const body = { ...fields };
    if (index !== null && index !== undefined) body.index = index;
    return this.write("POST", `${this.page.planUrl()}subtasks/`, body, "add");
  }

  editPlan(fields) {
    return this.write("PATCH", this.page.planUrl(), fields, "plan");
  }

  async finishPlan(state) {
    const outcome = await askText({
      title: t(state === "done" ? "finish_plan_title" : "abandon_plan_title"),
      message: t(state === "done" ? "finish_plan_text" : "abandon_plan_text"),
      label: t(state === "done" ? "outcome" : "abandon_reason"),
      confirm: t(state === "done" ? "finish_plan" : "abandon_plan"),
      required: true,
    });
    if (!outcome) return false;
    return this.write("PATCH", this.page.planUrl(), { state, outcome }, "plan");
  }

  /** Delete after a short grace period, so that Undo needs no server round trip. */
  remove(subtask) {
    const id = subtask.id;
    const url = this.page.subtaskUrl(id);
    this.page.board.hide(id);
    const commit = async ({ keepalive = false } = {}) => {
      if (!this.pendingDeletes.has(id)) return;
      this.pendingDeletes.delete(id);
      this.page.ownChanges.set(id, Date.now());
      try {
        await api("DELETE", url, undefined, { keepalive });
        if (!this.page.live.isOpen() && this.page.plan) this.page.refreshPlan(this.page.plan.id);
      } catch (error) {
        this.page.board.unhide(id);
        this.reportError(error);
      }
      // On success the id stays hidden until its delete event removes it from the plan.
    };
    const note = toast(t("deleted_subtask", { name: subtask.name }), {
      actionLabel: t("undo"),
      timeout: UNDO_MS,
      onAction: () => {
        this.pendingDeletes.delete(id);
        this.page.board.unhide(id);
      },
      onTimeout: () => commit(),
    });
    this.pendingDeletes.set(id, { commit, note });
    return Promise.resolve(true);
  }

  flushDeletes() {
    for (const { commit, note } of [...this.pendingDeletes.values()]) {
      note.dismiss();
      commit({ keepalive: true });
    }
  }
}

/** A readable message in the page's language when we know the error, else the server's. */
export function errorText(error) {
  if (!(error instanceof ApiError)) return String(error);
  if (error.status === 0) return t("err_network");
  const key = `err_${error.code}`;
  const translated = t(key);
  if (translated !== key) return translated;
  if (error.status === 403) return t("err_forbidden");
  return error.message;
}
