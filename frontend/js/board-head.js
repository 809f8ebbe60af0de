// The board's header and its add panel: the plan's name, state, texts (clamped when long),
// progress, costs ("This plan", and "This session" on the session page) and the toolbar (add a subtask, edit the plan, finish or
// abandon it); the plan's edit form replaces the header while open, the add form sits in its
// own panel under it. Both keep an open form across live updates.

import { stateLabel } from "./board-card.js";
import { addSubtaskForm, focusAction, planEditForm, updatePositions } from "./board-forms.js";
import { isFinished, progress } from "./board-state.js";
import { h, icon, replaceChildren } from "./dom.js";
import { scopedCost } from "./cost.js";
import { formatWhen, t } from "./i18n.js";
import { markdownElement } from "./markdown.js";

/** @typedef {import("./board.js").BoardView} BoardView */

// Plan texts longer than this are clamped in the header until "Show more".
const CLAMP_CHARS = 240;

export class PlanHead {
  /** @param {BoardView} board */
  constructor(board) {
    this.board = board;
    this.el = h("header", { class: "plan-head" });
    this.editing = false;
    this.expanded = false;
  }

  /** No plan, or a plan nobody may change: no form stays open. */
  reset() {
    this.editing = false;
  }

  render(editable) {
    const plan = this.board.plan;
    if (this.editing && this.el.querySelector(".plan-edit")) {
      // Keep the open form; only the state follows the live plan.
      this.updateStatus();
      return;
    }
    const stats = progress(plan);
    const percent = stats.total ? Math.round((100 * stats.done) / stats.total) : 0;
    const fields = h("dl", { class: "plan-fields" });
    if (plan.expected_outcome) {
      fields.append(
        h("dt", { text: t("expected_outcome") }),
        h("dd", {}, markdownElement(plan.expected_outcome, "plan-expected")),
      );
    }
    if (plan.outcome) {
      fields.append(
        h("dt", { text: t("outcome") }),
        h("dd", {}, markdownElement(plan.outcome, "plan-outcome")),
      );
    }
    replaceChildren(
      this.el,
      h(
        "div",
        { class: "plan-title-row" },
        h("h2", { class: "plan-name", text: plan.name }),
        h("span", { class: `pill pill-${plan.state} plan-state`, text: stateLabel(plan.state) }),
      ),
      this.clampable(
        plan.description ? markdownElement(plan.description, "plan-desc") : null,
        fields.childElementCount ? fields : null,
        plan.description.length + plan.expected_outcome.length + plan.outcome.length,
      ),
      h(
        "div",
        { class: "plan-progress" },
        h(
          "div",
          {
            class: "progress-bar",
            role: "progressbar",
            "aria-valuemin": 0,
            "aria-valuemax": stats.total,
            "aria-valuenow": stats.done,
            "aria-label": t("progress"),
          },
          h("span", { style: { width: `${percent}%` } }),
        ),
        h("span", {
          class: "progress-text",
          text: t("progress_done", { done: stats.done, total: stats.total }),
        }),
        this.costs(),
        this.board.marks.editMark("plan"),
        h("span", {
          class: "plan-meta",
          text: t("plan_meta", { version: plan.version, owner: plan.owner?.username ?? "" }),
          title: plan.created_at ? formatWhen(plan.created_at, { absolute: true }) : "",
        }),
      ),
      this.notice(),
      editable ? this.toolbar() : null,
    );
  }

  /**
   * "This plan: …" while the board knows what the plan cost and, on the session page, "This
   * session: …" beside it (the steps before the plan existed count there only).
   */
  costs() {
    const { usage, sessionSpent } = this.board.marks;
    const plan = usage && usage.plan_id === this.board.plan.id
      ? scopedCost("plan", usage.cost_usd, usage.tokens)
      : "";
    const session = sessionSpent
      ? scopedCost("session", sessionSpent.cost_usd, sessionSpent.tokens)
      : "";
    return [
      plan ? h("span", { class: "plan-cost", dataset: { scope: "plan" }, text: plan }) : null,
      session
        ? h("span", { class: "session-spent", dataset: { scope: "session" }, text: session })
        : null,
    ];
  }

  /** A finished plan says so, with a link to its review page. */
  notice() {
    const plan = this.board.plan;
    if (!isFinished(plan)) return null;
    const reviewUrl = this.board.historyPlanUrl;
    return h(
      "p",
      { class: "plan-notice" },
      h("span", { text: t(`plan_${plan.state}_notice`) }),
      reviewUrl ? h("a", { href: reviewUrl(plan.id), text: t("open_in_history") }) : null,
    );
  }

  toolbar() {
    return h(
      "div",
      { class: "plan-toolbar", role: "toolbar", "aria-label": t("plan_actions") },
      textButton("add", "plus", t("add_subtask"), () => this.board.adder.open(), true),
      textButton("edit-plan", "edit", t("edit_plan"), () => this.openEditor()),
      textButton("finish-plan", "check", t("finish_plan"), () => this.finish("done")),
      textButton("abandon-plan", "abandon", t("abandon_plan"), () => this.finish("abandoned")),
    );
  }

  /**
   * The plan's description and fields, clamped to a few lines when long, with a button that
   * shows them whole (and back).
   * @param {HTMLElement | null} description
   * @param {HTMLElement | null} fields
   * @param {number} length
   */
  clampable(description, fields, length) {
    if (!description && !fields) return null;
    const long = length > CLAMP_CHARS;
    const box = h("div", { class: "plan-texts", id: "plan-texts" }, description, fields);
    box.classList.toggle("is-clamped", long && !this.expanded);
    if (!long) return box;
    const toggle = h("button", {
      type: "button",
      class: "btn-link plan-more",
      dataset: { action: "plan-more" },
      "aria-expanded": String(this.expanded),
      "aria-controls": "plan-texts",
      text: t(this.expanded ? "show_less" : "show_more"),
      onclick: () => {
        this.expanded = !this.expanded;
        box.classList.toggle("is-clamped", !this.expanded);
        toggle.setAttribute("aria-expanded", String(this.expanded));
        toggle.textContent = t(this.expanded ? "show_less" : "show_more");
      },
    });
    return [box, toggle];
  }

  updateStatus() {
    const pill = this.el.querySelector(".plan-state");
    const plan = this.board.plan;
    if (pill) {
      pill.className = `pill pill-${plan.state} plan-state`;
      pill.textContent = stateLabel(plan.state);
    }
  }

  openEditor() {
    const board = this.board;
    if (!board.isEditable()) return;
    this.editing = true;
    const close = () => {
      this.editing = false;
      board.render(board.plan);
      focusAction(this.el, "edit-plan");
    };
    const form = planEditForm({
      plan: board.plan,
      current: () => board.plan,
      save: (changed) => board.actions.editPlan(changed),
      close,
    });
    replaceChildren(this.el, form);
    form.querySelector("input").focus();
  }

  async finish(state) {
    if (this.board.actions.finishPlan) await this.board.actions.finishPlan(state);
  }
}

/** The add-a-subtask form, in its own panel under the header while open. */
export class AddPanel {
  /** @param {BoardView} board */
  constructor(board) {
    this.board = board;
    this.el = h("div", { class: "add-panel", hidden: true });
    this.adding = false;
    /** @type {HTMLFormElement | null} the add form while the panel is open */
    this.form = null;
  }

  open() {
    if (!this.board.isEditable()) return;
    this.adding = true;
    this.form = null;
    this.render(true);
    this.el.querySelector("input[name=name]").focus();
  }

  close() {
    this.adding = false;
    this.render(this.board.isEditable());
    focusAction(this.board.head.el, "add");
  }

  render(editable) {
    if (!editable || !this.adding) {
      this.el.hidden = true;
      replaceChildren(this.el);
      this.form = null;
      return;
    }
    this.el.hidden = false;
    if (!this.form) {
      this.form = addSubtaskForm({
        current: () => this.board.plan,
        add: (fields, index) => this.board.actions.add(fields, index),
        close: () => this.close(),
      });
      replaceChildren(this.el, this.form);
    }
    updatePositions(this.form, this.board.plan);
  }
}

/** A toolbar button with its label written out. */
function textButton(action, iconName, label, onClick, primary = false) {
  return h(
    "button",
    {
      type: "button",
      class: primary ? "btn btn-text btn-primary" : "btn btn-text",
      dataset: { action },
      title: label,
      onclick: onClick,
    },
    icon(iconName),
    h("span", { text: label }),
  );
}
