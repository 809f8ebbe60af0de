// The plan board: header, progress and four columns of subtask cards in plan order.
// It renders a snapshot and reports what the person wants through `actions`; it never talks
// to the server itself. Cards are keyed by subtask id and patched in place, so an open edit
// form or the keyboard focus survives live updates from the agent or other browsers.
// Its forms live in board-forms.js, dragging cards in board-drag.js.

import { CardDragging } from "./board-drag.js";
import {
  addSubtaskForm,
  cardEditForm,
  focusAction,
  planEditForm,
  updatePositions,
} from "./board-forms.js";
import { STATES, isFinished, progress } from "./board-state.js";
import { h, icon, replaceChildren } from "./dom.js";
import { formatTokens, formatUsd } from "./format.js";
import { formatWhen, t } from "./i18n.js";
import { markdownElement } from "./markdown.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanState} PlanState */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").PlanUsage} PlanUsage */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/**
 * What the board reports; each returns a promise that resolves to true when the change was
 * accepted.
 * @typedef {object} BoardActions
 * @property {(subtask: SubtaskSnapshot, state: PlanState) => Promise<boolean>} [setState]
 * @property {(subtask: SubtaskSnapshot, index: number) => Promise<boolean>} [move]
 * @property {(subtask: SubtaskSnapshot, change: {index?: number, state?: PlanState})
 *   => Promise<boolean>} [change]
 * @property {(subtask: SubtaskSnapshot, fields: Record<string, string>) => Promise<boolean>} [edit]
 * @property {(subtask: SubtaskSnapshot) => Promise<boolean>} [remove]
 * @property {(fields: Record<string, string>, index: number | null) => Promise<boolean>} [add]
 * @property {(fields: Record<string, string>) => Promise<boolean>} [editPlan]
 * @property {(state: PlanState) => Promise<boolean>} [finishPlan]
 */
/**
 * @typedef {object} BoardOptions
 * @property {boolean} [editable] may this person change the plan
 * @property {BoardActions} [actions]
 * @property {((planId: number) => string) | null} [historyPlanUrl] the plan's review page
 * @property {string} [emptyMessage] text shown when there is no plan
 */
/**
 * @typedef {object} Column
 * @property {HTMLElement} section
 * @property {HTMLElement} list
 * @property {HTMLElement} count
 * @property {HTMLElement} placeholder
 */

/** @param {string} state */
export function stateLabel(state) {
  return t(`state_${state}`);
}

const FLASH_MS = 2400;
// How long a card says "seen by the agent" after the agent received a person's edit.
const SEEN_MS = 15000;

/** "$0.012 · 4.6k tokens" for a cost and token count; "" when nothing was spent. */
export function formatCost(costUsd, tokens) {
  if (!tokens && !costUsd) return "";
  return t("cost", { cost: formatUsd(costUsd), tokens: formatTokens(tokens) });
}

export class BoardView {
  /**
   * @param {HTMLElement} root
   * @param {BoardOptions} options
   */
  constructor(root, { editable = false, actions = {}, historyPlanUrl = null, emptyMessage = "" }) {
    this.root = root;
    this.editable = editable;
    this.actions = actions;
    this.historyPlanUrl = historyPlanUrl;
    /** @type {PlanSnapshot | null} */
    this.plan = null;
    this.cards = new Map(); // subtask id -> {el, sig}
    this.editing = new Set(); // subtask ids with an open edit form
    this.hidden = new Set(); // subtask ids waiting for their delete to be committed
    this.headerEditing = false;
    this.adding = false;
    /** @type {HTMLFormElement | null} the add form while the add panel is open */
    this.addForm = null;
    this.dragging = new CardDragging(this);
    // How often each card was highlighted: lets tests and debugging see who saw what change.
    this.highlighted = new Map();
    /** @type {PlanUsage | null} */
    this.usage = null;
    this.edits = new Map(); // subtask id (or "plan") -> "pending" | "seen": people's edits
    this.seenTimers = new Map();
    this.build(emptyMessage);
  }

  // --- skeleton ------------------------------------------------------------------------

  build(emptyMessage) {
    this.empty = h(
      "div",
      { class: "board-empty" },
      h("div", { class: "board-empty-art", "aria-hidden": "true" }, [1, 2, 3].map(() => h("span"))),
      h("p", { text: emptyMessage || t("no_plan") }),
    );
    this.head = h("header", { class: "plan-head" });
    this.addPanel = h("div", { class: "add-panel", hidden: true });
    this.columnsEl = h("div", { class: "columns" });
    /** @type {Record<string, Column>} */
    this.columns = {};
    for (const state of /** @type {PlanState[]} */ (STATES)) {
      const list = h("ol", { class: "cards", "aria-label": stateLabel(state) });
      const count = h("span", { class: "column-count", text: "0" });
      const placeholder = h("p", { class: "column-empty", text: t("column_empty") });
      const section = h(
        "section",
        { class: `column column-${state}`, dataset: { state } },
        h(
          "h3",
          { class: "column-title" },
          h("span", { class: "state-dot", "aria-hidden": "true" }),
          h("span", { text: stateLabel(state) }),
          count,
        ),
        list,
        placeholder,
      );
      this.dragging.bindTarget(section, list, state);
      this.columns[state] = { section, list, count, placeholder };
      this.columnsEl.append(section);
    }
    this.root.classList.add("board");
    this.root.append(this.empty, this.head, this.addPanel, this.columnsEl);
  }

  isEditable() {
    return this.editable && Boolean(this.plan) && !isFinished(this.plan);
  }

  // --- rendering -----------------------------------------------------------------------

  /**
   * Show `plan` (a snapshot, or null); `flash` lists subtask ids to highlight briefly.
   * @param {PlanSnapshot | null} plan
   * @param {{flash?: number[], flashHead?: boolean}} [options]
   */
  render(plan, { flash = [], flashHead = false } = {}) {
    const focus = this.captureFocus();
    this.plan = plan;
    this.root.classList.toggle("has-plan", Boolean(plan));
    this.empty.hidden = Boolean(plan);
    this.head.hidden = !plan;
    this.columnsEl.hidden = !plan;
    if (!plan) {
      for (const card of this.cards.values()) card.el.remove();
      this.cards.clear();
      this.editing.clear();
      this.adding = false;
      this.headerEditing = false;
      this.addPanel.hidden = true;
      return;
    }
    const editable = this.isEditable();
    if (!editable) {
      this.editing.clear();
      this.adding = false;
      this.headerEditing = false;
    }
    this.root.classList.toggle("is-editable", editable);
    this.renderHead(editable);
    this.renderAddPanel(editable);
    const present = new Set(plan.subtasks.map((subtask) => subtask.id));
    for (const id of this.hidden) if (!present.has(id)) this.hidden.delete(id);
    const visible = plan.subtasks.filter((subtask) => !this.hidden.has(subtask.id));
    const seen = new Set();
    for (const state of STATES) {
      const column = this.columns[state];
      const inColumn = visible.filter((subtask) => subtask.state === state);
      const elements = inColumn.map((subtask, position) => {
        seen.add(subtask.id);
        return this.cardFor(subtask, {
          editable,
          first: position === 0,
          last: position === inColumn.length - 1,
        });
      });
      syncChildren(column.list, elements);
      column.count.textContent = String(inColumn.length);
      column.placeholder.hidden = inColumn.length > 0;
    }
    for (const [id, card] of this.cards) {
      if (!seen.has(id)) {
        card.el.remove();
        this.cards.delete(id);
        this.editing.delete(id);
      }
    }
    this.restoreFocus(focus);
    for (const id of flash) this.flash(id);
    if (flashHead) flashElement(this.head);
  }

  renderHead(editable) {
    const plan = this.plan;
    if (this.headerEditing && this.head.querySelector(".plan-edit")) {
      // Keep the open form; only the state and progress follow the live plan.
      this.updateHeadStatus();
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
    const toolbar = editable
      ? h(
          "div",
          { class: "plan-toolbar", role: "toolbar", "aria-label": t("plan_actions") },
          button("add", "plus", t("add_subtask"), () => this.openAddPanel(), {
            withText: true,
            primary: true,
          }),
          button("edit-plan", "edit", t("edit_plan"), () => this.openHeadEditor(), {
            withText: true,
          }),
          button("finish-plan", "check", t("finish_plan"), () => this.finishPlan("done"), {
            withText: true,
          }),
          button("abandon-plan", "abandon", t("abandon_plan"), () => this.finishPlan("abandoned"), {
            withText: true,
          }),
        )
      : null;
    let notice = null;
    if (isFinished(plan)) {
      notice = h(
        "p",
        { class: "plan-notice" },
        h("span", { text: t(`plan_${plan.state}_notice`) }),
        this.historyPlanUrl
          ? h("a", { href: this.historyPlanUrl(plan.id), text: t("open_in_history") })
          : null,
      );
    }
    replaceChildren(
      this.head,
      h(
        "div",
        { class: "plan-title-row" },
        h("h2", { class: "plan-name", text: plan.name }),
        h("span", { class: `pill pill-${plan.state} plan-state`, text: stateLabel(plan.state) }),
      ),
      plan.description ? markdownElement(plan.description, "plan-desc") : null,
      fields.childElementCount ? fields : null,
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
        this.usage && this.usage.plan_id === plan.id
          ? h("span", {
              class: "plan-cost",
              text: t("plan_usage", {
                usage: formatCost(this.usage.cost_usd, this.usage.tokens),
              }),
            })
          : null,
        this.editMark("plan"),
        h("span", {
          class: "plan-meta",
          text: t("plan_meta", { version: plan.version, owner: plan.owner?.username ?? "" }),
          title: plan.created_at ? formatWhen(plan.created_at, { absolute: true }) : "",
        }),
      ),
      notice,
      toolbar,
    );
  }

  updateHeadStatus() {
    const pill = this.head.querySelector(".plan-state");
    if (pill) {
      pill.className = `pill pill-${this.plan.state} plan-state`;
      pill.textContent = stateLabel(this.plan.state);
    }
  }

  openHeadEditor() {
    if (!this.isEditable()) return;
    this.headerEditing = true;
    const close = () => {
      this.headerEditing = false;
      this.render(this.plan);
      focusAction(this.head, "edit-plan");
    };
    const form = planEditForm({
      plan: this.plan,
      current: () => this.plan,
      save: (changed) => this.actions.editPlan(changed),
      close,
    });
    replaceChildren(this.head, form);
    form.querySelector("input").focus();
  }

  async finishPlan(state) {
    if (this.actions.finishPlan) await this.actions.finishPlan(state);
  }

  // --- adding ----------------------------------------------------------------------------

  openAddPanel() {
    if (!this.isEditable()) return;
    this.adding = true;
    this.addForm = null;
    this.renderAddPanel(true);
    this.addPanel.querySelector("input[name=name]").focus();
  }

  closeAddPanel() {
    this.adding = false;
    this.renderAddPanel(this.isEditable());
    focusAction(this.head, "add");
  }

  renderAddPanel(editable) {
    if (!editable || !this.adding) {
      this.addPanel.hidden = true;
      replaceChildren(this.addPanel);
      this.addForm = null;
      return;
    }
    this.addPanel.hidden = false;
    if (!this.addForm) {
      this.addForm = addSubtaskForm({
        current: () => this.plan,
        add: (fields, index) => this.actions.add(fields, index),
        close: () => this.closeAddPanel(),
      });
      replaceChildren(this.addPanel, this.addForm);
    }
    updatePositions(this.addForm, this.plan);
  }

  // --- cards -------------------------------------------------------------------------------

  /** @param {SubtaskSnapshot} subtask */
  cardFor(subtask, context) {
    let card = this.cards.get(subtask.id);
    if (!card) {
      const el = h("li", { class: "card", dataset: { id: subtask.id } });
      this.dragging.bindSource(el);
      card = { el, sig: null };
      this.cards.set(subtask.id, card);
    }
    const editing = this.editing.has(subtask.id);
    card.el.dataset.index = String(subtask.index);
    card.el.dataset.state = subtask.state;
    // classList (not className) keeps a running highlight or drag style.
    for (const state of STATES) card.el.classList.toggle(`card-${state}`, state === subtask.state);
    card.el.classList.toggle("is-editing", editing);
    card.el.draggable = context.editable && !editing;
    if (editing && card.el.querySelector(".card-edit")) {
      // Keep what the person is typing; only the index badge follows the live plan.
      const badge = card.el.querySelector(".card-index");
      if (badge) badge.textContent = `#${subtask.index}`;
      return card.el;
    }
    const sig = JSON.stringify([
      subtask,
      context,
      editing,
      this.costOf(subtask.id),
      this.edits.get(subtask.id) || "",
    ]);
    if (sig !== card.sig) {
      card.sig = sig;
      if (editing) this.fillEditForm(card.el, subtask);
      else this.fillCard(card.el, subtask, context);
    }
    return card.el;
  }

  /** @param {HTMLElement} el @param {SubtaskSnapshot} subtask */
  fillCard(el, subtask, { editable, first, last }) {
    const actions = editable ? this.cardActions(subtask, { first, last }) : null;
    replaceChildren(
      el,
      h(
        "div",
        { class: "card-head" },
        h("span", { class: "card-index", text: `#${subtask.index}` }),
        h("h4", { class: "card-name", text: subtask.name }),
      ),
      subtask.description ? markdownElement(subtask.description, "card-desc") : null,
      subtask.expected_outcome
        ? h(
            "div",
            { class: "card-field card-expected" },
            h("span", { class: "field-tag", text: t("expected") }),
            markdownElement(subtask.expected_outcome, "field-text"),
          )
        : null,
      subtask.outcome
        ? h(
            "div",
            { class: "card-field card-outcome" },
            h("span", { class: "field-tag", text: t("outcome") }),
            markdownElement(subtask.outcome, "field-text"),
          )
        : null,
      this.cardChips(subtask),
      actions,
    );
  }

  /** The profile that does the subtask, what it cost, and whether the agent saw an edit. */
  /** @param {SubtaskSnapshot} subtask */
  cardChips(subtask) {
    const cost = this.costOf(subtask.id);
    const chips = [
      subtask.agent
        ? h("span", {
            class: "chip chip-agent",
            text: `@${subtask.agent}`,
            title: t("agent_profile_chip", { name: subtask.agent }),
          })
        : null,
      cost ? h("span", { class: "chip chip-cost", text: cost }) : null,
      this.editMark(subtask.id),
    ].filter(Boolean);
    return chips.length ? h("div", { class: "card-chips" }, chips) : null;
  }

  editMark(key) {
    const mark = this.edits.get(key);
    if (!mark) return null;
    return h("span", {
      class: `chip chip-${mark}`,
      dataset: { edit: mark },
      text: t(mark === "pending" ? "edit_pending" : "edit_seen"),
      title: t(mark === "pending" ? "edit_pending_help" : "edit_seen_help"),
    });
  }

  costOf(subtaskId) {
    const spent = this.usage && this.usage.subtasks && this.usage.subtasks[String(subtaskId)];
    return spent ? formatCost(spent.cost_usd, spent.tokens) : "";
  }

  // --- what the agent spent and saw ----------------------------------------------------------

  /** The agent profiles a card may name (offered as suggestions in the edit form). */
  setProfiles(profiles) {
    let list = document.getElementById("pb-profiles");
    if (!list) {
      list = h("datalist", { id: "pb-profiles" });
      this.root.append(list);
    }
    replaceChildren(
      list,
      (profiles || []).map((profile) => h("option", { value: profile.name, text: profile.title })),
    );
  }

  /**
   * Costs of the plan and its subtasks, all of them (snapshots).
   * @param {PlanUsage | null | undefined} usage
   */
  setUsage(usage) {
    this.usage = usage || null;
    if (this.plan) this.render(this.plan);
  }

  /**
   * New totals after an agent step (`plan.usage` events): the plan's, and those of the subtask
   * the step was spent on; the other subtasks' are as they were.
   * @param {PlanUsage} usage
   */
  addUsage(usage) {
    const known = this.usage && this.usage.plan_id === usage.plan_id ? this.usage.subtasks : {};
    this.setUsage({ ...usage, subtasks: { ...known, ...usage.subtasks } });
  }

  /**
   * People's edits the agent has not received yet (snapshot `unseen_edits`).
   * @param {{version: number, subtask_id: number | null, action: string}[] | undefined} edits
   */
  setUnseen(edits) {
    for (const [key, mark] of [...this.edits]) if (mark === "pending") this.edits.delete(key);
    for (const edit of edits || []) this.edits.set(edit.subtask_id ?? "plan", "pending");
    if (this.plan) this.render(this.plan);
  }

  /**
   * A person's change just committed: pending until a hint shows it to the agent.
   * @param {PlanEvent} event
   */
  markPending(event) {
    if (!event.actor || event.actor.kind !== "user" || event.seen) return;
    this.edits.set(event.subtask_id ?? "plan", "pending");
  }

  /**
   * The agent received these edits in a hint (`plan.seen`).
   * @param {{subtask_id: number | null}[]} seen
   */
  markSeen(seen) {
    for (const item of seen || []) {
      const key = item.subtask_id ?? "plan";
      this.edits.set(key, "seen");
      clearTimeout(this.seenTimers.get(key));
      this.seenTimers.set(
        key,
        setTimeout(() => {
          if (this.edits.get(key) === "seen") this.edits.delete(key);
          if (this.plan) this.render(this.plan);
        }, SEEN_MS),
      );
    }
    if (this.plan) this.render(this.plan);
  }

  /** @param {SubtaskSnapshot} subtask */
  cardActions(subtask, { first, last }) {
    const named = (key) => `${t(key)}: ${subtask.name}`;
    const stateButtons = [];
    const setState = (state) => () => this.actions.setState(subtask, state);
    if (subtask.state === "todo") {
      stateButtons.push(button("start", "play", named("start"), setState("in_progress")));
    }
    if (subtask.state === "todo" || subtask.state === "in_progress") {
      stateButtons.push(button("finish", "check", named("finish"), setState("done")));
      stateButtons.push(button("abandon", "abandon", named("abandon"), setState("abandoned")));
    }
    if (subtask.state !== "todo") {
      stateButtons.push(button("to-todo", "undo", named("back_to_todo"), setState("todo")));
    }
    return h(
      "div",
      { class: "card-actions", role: "toolbar", "aria-label": named("card_actions") },
      h("div", { class: "action-group" }, stateButtons),
      h(
        "div",
        { class: "action-group" },
        button("up", "up", named("move_up"), () => this.moveWithinColumn(subtask, -1), {
          disabled: first,
        }),
        button("down", "down", named("move_down"), () => this.moveWithinColumn(subtask, 1), {
          disabled: last,
        }),
        button("edit", "edit", named("edit"), () => this.openCardEditor(subtask.id)),
        button("delete", "trash", named("delete"), () => this.actions.remove(subtask), {
          danger: true,
        }),
      ),
    );
  }

  /** Up/down swap places with the neighbour in the same column (that is what people see). */
  /** @param {SubtaskSnapshot} subtask @param {number} direction */
  moveWithinColumn(subtask, direction) {
    const column = this.plan.subtasks.filter(
      (s) => s.state === subtask.state && !this.hidden.has(s.id),
    );
    const position = column.findIndex((s) => s.id === subtask.id);
    const neighbour = column[position + direction];
    if (!neighbour) return;
    // Moving up takes the neighbour's index; moving down too, because removing the card
    // first shifts the later neighbour up by one.
    this.actions.move(subtask, neighbour.index);
  }

  openCardEditor(id) {
    if (!this.isEditable()) return;
    this.editing.add(id);
    this.render(this.plan);
    const field = this.cards.get(id)?.el.querySelector("input[name=name]");
    if (field) field.focus();
  }

  closeCardEditor(id, { refocus = true } = {}) {
    this.editing.delete(id);
    const card = this.cards.get(id);
    if (card) card.sig = null;
    this.render(this.plan);
    if (refocus) focusAction(this.cards.get(id)?.el, "edit");
  }

  /** @param {HTMLElement} el @param {SubtaskSnapshot} subtask */
  fillEditForm(el, subtask) {
    const form = cardEditForm({
      subtask,
      current: () => this.plan.subtasks.find((s) => s.id === subtask.id) || subtask,
      save: (live, changed) => this.actions.edit(live, changed),
      close: () => this.closeCardEditor(subtask.id),
    });
    replaceChildren(el, form);
  }

  // --- pending deletes (undo) -------------------------------------------------------------

  hide(id) {
    this.hidden.add(id);
    if (this.plan) this.render(this.plan);
  }

  unhide(id) {
    this.hidden.delete(id);
    if (this.plan) this.render(this.plan);
  }

  // --- highlight and focus ------------------------------------------------------------------

  flash(id) {
    const card = this.cards.get(id);
    if (!card) return;
    this.highlighted.set(id, (this.highlighted.get(id) || 0) + 1);
    flashElement(card.el);
  }

  captureFocus() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !this.root.contains(active)) return null;
    /** @type {HTMLElement | null} */
    const card = active.closest(".card");
    return {
      element: active,
      cardId: card ? Number(card.dataset.id) : null,
      action: active.dataset ? active.dataset.action : undefined,
    };
  }

  restoreFocus(focus) {
    if (!focus) return;
    if (focus.element.isConnected) {
      if (document.activeElement !== focus.element) focus.element.focus();
      return;
    }
    // The focused button was rebuilt: focus its successor, or the card's first control,
    // so a keyboard user can keep pressing "move up".
    const card = focus.cardId !== null ? this.cards.get(focus.cardId) : null;
    if (!card) return;
    const same = focus.action
      ? card.el.querySelector(`[data-action="${focus.action}"]:not([disabled])`)
      : null;
    const fallback = card.el.querySelector("button:not([disabled])");
    (same || fallback || card.el).focus();
  }
}

// --- helpers ----------------------------------------------------------------------------------

function button(action, iconName, label, onClick, options = {}) {
  const { disabled = false, withText = false, primary = false, danger = false } = options;
  const classes = ["btn", withText ? "btn-text" : "icon-btn"];
  if (primary) classes.push("btn-primary");
  if (danger) classes.push("btn-danger");
  return h(
    "button",
    {
      type: "button",
      class: classes.join(" "),
      dataset: { action },
      "aria-label": withText ? null : label,
      title: label,
      disabled,
      onclick: onClick,
    },
    icon(iconName),
    withText ? h("span", { text: label }) : null,
  );
}

/** Put `elements` into `parent` in this order, moving only what is out of place. */
function syncChildren(parent, elements) {
  elements.forEach((element, position) => {
    if (parent.children[position] !== element) {
      parent.insertBefore(element, parent.children[position] || null);
    }
  });
  while (parent.children.length > elements.length) parent.lastElementChild.remove();
}

function flashElement(element) {
  element.classList.remove("flash");
  // Reading layout restarts the CSS animation when the same card changes twice quickly.
  void element.offsetWidth;
  element.classList.add("flash");
  clearTimeout(element.flashTimer);
  element.flashTimer = setTimeout(() => element.classList.remove("flash"), FLASH_MS);
}
