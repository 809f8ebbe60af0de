// The chat's run bar and "Start this plan?" prompt: what the agent's run is doing (queued,
// its place in line, the step it is on, waiting, stopped with what it spent), a Stop button,
// and the go-ahead a drafted plan waits for ("Keep editing" hides it behind a Start button).

import { scopedCost } from "./cost.js";
import { h, icon } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").RunSnapshot} RunSnapshot */
/** @typedef {import("./chat.js").ChatView} ChatView */

const ACTIVE_RUN = new Set(["queued", "running"]);
const FINISHED_RUN = new Set(["succeeded", "failed", "cancelled"]);
const STOPPABLE_RUN = new Set(["queued", "running", "waiting_for_user", "waiting_for_approval"]);

export class RunBar {
  /** @param {ChatView} chat */
  constructor(chat) {
    this.chat = chat;
    this.dismissedRuns = new Set();
    this.status = h("span", { class: "run-status", role: "status" });
    this.detail = h("span", { class: "run-detail" });
    // What the run spent, once it stopped (the board shows the plan's share while it runs).
    this.usage = h("span", { class: "run-usage", dataset: { scope: "run" } });
    this.stopButton = barButton("stop", "btn-danger", "stop", t("stop"), () => this.stop());
    this.startButton = barButton("start-plan", "btn-primary", "play", t("start_plan"), () =>
      this.goAhead(),
    );
    this.el = h(
      "div",
      { class: "run-bar" },
      this.status,
      this.detail,
      this.usage,
      h("span", { class: "spacer" }),
      this.startButton,
      this.stopButton,
    );
    this.confirm = this.buildConfirm();
  }

  buildConfirm() {
    const yes = h(
      "button",
      { type: "button", class: "btn btn-primary", dataset: { action: "go-ahead" } },
      icon("play"),
      h("span", { text: t("confirm_yes") }),
    );
    yes.addEventListener("click", () => this.goAhead());
    const keep = h("button", {
      type: "button",
      class: "btn",
      dataset: { action: "keep-editing" },
      text: t("confirm_keep_editing"),
    });
    keep.addEventListener("click", () => {
      this.dismiss();
      if (this.chat.options.onKeepEditing) this.chat.options.onKeepEditing();
    });
    return h(
      "section",
      { class: "confirm", hidden: true, "aria-labelledby": "confirm-title" },
      h("h3", { id: "confirm-title", text: t("confirm_title") }),
      h("p", { text: t(this.chat.options.isOwner ? "confirm_text" : "confirm_text_other") }),
      h("div", { class: "form-buttons" }, yes, keep),
    );
  }

  /** The prompt of the run shown is answered or put off: a Start button stands in for it. */
  dismiss() {
    const run = this.chat.run;
    if (run) this.dismissedRuns.add(run.id);
    this.chat.setRun(run);
  }

  async goAhead() {
    this.dismiss();
    if (this.chat.options.onGoAhead) await this.chat.options.onGoAhead();
  }

  async stop() {
    this.stopButton.disabled = true;
    try {
      await this.chat.options.onStop();
    } finally {
      this.chat.setRun(this.chat.run);
    }
  }

  /** @param {RunSnapshot | null} run */
  show(run) {
    const { options, editable } = this.chat;
    // The inbox links to a waiting run as `#run-<id>`.
    this.el.id = run ? `run-${run.id}` : "";
    const status = run ? run.status : "idle";
    this.el.dataset.status = status;
    const stopping = Boolean(run && run.cancel_requested && ACTIVE_RUN.has(status));
    this.status.className = `run-status run-${status}`;
    this.status.textContent = stopping ? t("run_stopping") : t(`run_${status}`);
    if (status === "waiting_for_user" && !stopping && !options.isOwner) {
      this.status.textContent = t("run_waiting_for_user_other");
    }
    // A tool waits on a person's answer (its question's card is in the transcript).
    if (run && status === "running" && !stopping && this.chat.elicitations.size) {
      this.status.textContent = t("run_waiting_answer");
    }
    // Waiting behind the owner's other runs (the per-user cap): say where in line it is.
    if (run && status === "queued" && !stopping && typeof run.queue_position === "number") {
      this.status.textContent = t("run_queue_position", { position: run.queue_position });
    }
    let detail = "";
    if (run && status === "running" && run.step_count) {
      detail = t("run_step", { step: run.step_count });
    } else if (run && status === "failed" && run.error) {
      detail = run.error;
    }
    // Paused at a spending limit: say what was spent and what to do, not "start this plan?".
    const budget = Boolean(run && status === "waiting_for_user" && run.pause_reason === "budget");
    if (budget) {
      this.status.textContent = t("run_budget_paused");
      detail = run.error || "";
    }
    this.detail.textContent = detail;
    this.detail.title = detail;
    const stopped = Boolean(run) && FINISHED_RUN.has(status);
    const tokens = run ? Number(run.prompt_tokens || 0) + Number(run.completion_tokens || 0) : 0;
    this.usage.textContent = stopped ? scopedCost("run", run.cost_usd, tokens) : "";
    this.usage.hidden = !this.usage.textContent;
    const canAct = editable && Boolean(run);
    // People named to answer a session write and decide, but do not stop its runs.
    this.stopButton.hidden = !(canAct && !options.answerOnly && STOPPABLE_RUN.has(status));
    this.stopButton.disabled = stopping;
    const waiting = canAct && status === "waiting_for_user" && !budget;
    const dismissed = waiting && this.dismissedRuns.has(run.id);
    this.confirm.hidden = !waiting || dismissed;
    this.startButton.hidden = !dismissed;
  }
}

/** A small button of the run bar, with its label written out. */
function barButton(action, kind, iconName, label, onClick) {
  return h(
    "button",
    { type: "button", class: `btn ${kind} btn-small`, dataset: { action }, onclick: onClick },
    icon(iconName),
    h("span", { text: label }),
  );
}
