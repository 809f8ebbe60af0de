// The plan board: header, progress and four columns of subtask cards in plan order.
// It renders a snapshot and reports what the person wants through `actions`; it never talks
// to the server itself. Cards are keyed by subtask id and patched in place, so an open edit
// form or the keyboard focus survives live updates from the agent or other browsers.
// One card is drawn by board-card.js, the card's detail panel is board-panel.js; the forms
// live in board-forms.js, dragging cards in board-drag.js.

import { openBlockers } from "./board-blockers.js";
import { fillCard } from "./board-card.js";
import { CardDragging } from "./board-drag.js";
import { addSubtaskForm, focusAction, planEditForm, updatePositions } from "./board-forms.js";
import { CardPanel } from "./board-panel.js";
import { STATES, isFinished, progress } from "./board-state.js";
import { flashElement, h, icon, replaceChildren, syncChildren } from "./dom.js";
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
 * @property {(subtask: SubtaskSnapshot, fields: Record<string, string | number[]>)
 *   => Promise<boolean>} [edit] text fields, or `blocked_by` (ids)
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
 * @property {boolean} [urlHash] the address remembers the open card (`#subtask-<id>`)
 * @property {(() => Promise<import("./board-panel.js").MessageLike[]>) | null} [loadMessages]
 *   the session's transcript: the panel lists the tool calls made while a card was in progress
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

// Plan texts longer than this are clamped in the header until "Show more".
const CLAMP_CHARS = 240;
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
  constructor(root, options) {
    const { editable = false, actions = {}, historyPlanUrl = null, emptyMessage = "" } = options;
    this.root = root;
    this.editable = editable;
    this.actions = actions;
    this.historyPlanUrl = historyPlanUrl;
    /** @type {PlanSnapshot | null} */
    this.plan = null;
    this.cards = new Map(); // subtask id -> {el, sig}
    this.editing = new Set(); // the subtask id whose editor the panel shows
    /** @type {number | null} the card whose "more" menu is open */
    this.menuId = null;
    /** @type {number | null} the card the detail panel shows */
    this.openId = null;
    this.hidden = new Set(); // subtask ids waiting for their delete to be committed
    this.headerEditing = false;
    this.headExpanded = false;
    this.hashFollowed = false;
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
    this.panel = new CardPanel(this, {
      urlHash: Boolean(options.urlHash),
      loadMessages: options.loadMessages || null,
    });
    this.build(emptyMessage);
    this.bindCardClicks();
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
    this.main = h("div", { class: "board-main" }, this.empty, this.head, this.addPanel, this.columnsEl);
    this.root.append(this.main, this.panel.el);
  }

  /** A click on a card (not on its controls) or its title link opens the detail panel. */
  bindCardClicks() {
    this.columnsEl.addEventListener("click", (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      const card = /** @type {HTMLElement | null} */ (target.closest(".card"));
      if (!card) return;
      const link = target.closest("a.card-open");
      if (link && (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey)) return;
      if (!link && target.closest("button, a, input, textarea, select, [role=menu]")) return;
      event.preventDefault();
      this.panel.open(Number(card.dataset.id));
    });
    this.columnsEl.addEventListener("keydown", (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      if (event.key === "Enter" && target.classList.contains("card")) {
        event.preventDefault();
        this.panel.open(Number(target.dataset.id));
      }
    });
    document.addEventListener("click", (event) => {
      if (this.menuId === null) return;
      const target = /** @type {HTMLElement} */ (event.target);
      if (!target.closest || !target.closest(".card-more")) this.setMenu(null);
    });
  }

  /** Open (or, with null, close) a card's "more" menu. @param {number | null} id */
  setMenu(id) {
    if (this.menuId === id) return;
    const previous = this.menuId;
    this.menuId = id;
    for (const cardId of [previous, id]) {
      const card = cardId === null ? null : this.cards.get(cardId);
      if (!card) continue;
      const menu = /** @type {HTMLElement | null} */ (card.el.querySelector(".card-menu"));
      const more = card.el.querySelector('[data-action="more"]');
      const open = cardId === id;
      if (menu) menu.hidden = !open;
      if (more) more.setAttribute("aria-expanded", String(open));
      card.el.classList.toggle("menu-open", open);
      card.sig = null;
      if (open && menu) {
        const first = /** @type {HTMLElement | null} */ (
          menu.querySelector("button:not([disabled])")
        );
        if (first) first.focus();
      }
    }
  }

  /** The card the panel shows is marked; null: none. @param {number | null} id */
  markOpen(id) {
    this.openId = id;
    this.editing.clear();
    if (id !== null && this.panel.editing) this.editing.add(id);
    for (const [cardId, card] of this.cards) {
      card.el.classList.toggle("is-open", cardId === id);
      card.el.classList.toggle("is-editing", this.editing.has(cardId));
      const link = card.el.querySelector("a.card-open");
      if (link) {
        if (cardId === id) link.setAttribute("aria-current", "true");
        else link.removeAttribute("aria-current");
      }
    }
  }

  /**
   * Focus a card's control `action` (e.g. "edit"), else its title link.
   * @param {number} id
   * @param {string} [action]
   */
  focusCard(id, action = "") {
    const card = this.cards.get(id);
    if (!card) return;
    const target = /** @type {HTMLElement | null} */ (
      (action && card.el.querySelector(`[data-action="${action}"]`)) ||
        card.el.querySelector("a.card-open")
    );
    if (target) target.focus();
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
      this.panel.close({ refocus: false, remember: false });
      this.root.dispatchEvent(new CustomEvent("board:rendered", { detail: { flash: [] } }));
      return;
    }
    const editable = this.isEditable();
    if (!editable) {
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
      // Empty columns stay narrow: the cards get the room.
      column.section.classList.toggle("is-empty", inColumn.length === 0);
    }
    this.columnsEl.dataset.filled = String(
      STATES.filter((state) => !this.columns[state].section.classList.contains("is-empty")).length,
    );
    for (const [id, card] of this.cards) {
      if (!seen.has(id)) {
        card.el.remove();
        this.cards.delete(id);
      }
    }
    if (this.menuId !== null && !this.cards.has(this.menuId)) this.menuId = null;
    this.panel.render();
    this.markOpen(this.panel.openId);
    this.restoreFocus(focus);
    if (!this.hashFollowed) {
      // A link to a card opens it once the plan is on the board.
      this.hashFollowed = true;
      if (this.panel.urlHash) this.panel.followHash();
    }
    for (const id of flash) this.flash(id);
    if (flashHead) flashElement(this.head);
    // Other views of the plan (board-list.js, board-keys.js) follow every render.
    this.root.dispatchEvent(new CustomEvent("board:rendered", { detail: { flash } }));
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
    const box = h(
      "div",
      { class: "plan-texts", id: "plan-texts" },
      description,
      fields,
    );
    box.classList.toggle("is-clamped", long && !this.headExpanded);
    if (!long) return box;
    const toggle = h("button", {
      type: "button",
      class: "btn-link plan-more",
      dataset: { action: "plan-more" },
      "aria-expanded": String(this.headExpanded),
      "aria-controls": "plan-texts",
      text: t(this.headExpanded ? "show_less" : "show_more"),
      onclick: () => {
        this.headExpanded = !this.headExpanded;
        box.classList.toggle("is-clamped", !this.headExpanded);
        toggle.setAttribute("aria-expanded", String(this.headExpanded));
        toggle.textContent = t(this.headExpanded ? "show_less" : "show_more");
      },
    });
    return [box, toggle];
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
      const el = h("li", {
        class: "card",
        dataset: { id: subtask.id, subtaskId: subtask.id },
      });
      this.dragging.bindSource(el);
      card = { el, sig: null };
      this.cards.set(subtask.id, card);
    }
    card.el.dataset.index = String(subtask.index);
    card.el.dataset.state = subtask.state;
    // classList (not className) keeps a running highlight, drag or presence style.
    for (const state of STATES) card.el.classList.toggle(`card-${state}`, state === subtask.state);
    card.el.draggable = context.editable;
    const menuOpen = this.menuId === subtask.id;
    const spent = this.spentOn(subtask.id);
    const blockers = openBlockers(subtask, this.plan);
    const mark = this.edits.get(subtask.id) || "";
    const sig = JSON.stringify([subtask, context, menuOpen, spent, mark, blockers]);
    if (sig !== card.sig) {
      card.sig = sig;
      fillCard(
        card.el,
        subtask,
        {
          ...context,
          menuOpen,
          spent,
          blockers,
          editMark: this.editMark(subtask.id, { short: true }),
        },
        {
          setState: (live, state) => this.actions.setState(live, state),
          moveWithinColumn: (live, direction) => this.moveWithinColumn(live, direction),
          edit: (live) => this.openCardEditor(live.id),
          remove: (live) => this.actions.remove(live),
          setMenu: (id) => this.setMenu(id),
        },
      );
      card.el.classList.toggle("menu-open", menuOpen);
    }
    return card.el;
  }

  /**
   * Whether the agent saw a person's edit; `short` for a card's badge line.
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

  /** What the agent spent on a subtask, or null. @param {number} subtaskId */
  spentOn(subtaskId) {
    const spent = this.usage && this.usage.subtasks && this.usage.subtasks[String(subtaskId)];
    return spent && (spent.tokens || spent.cost_usd)
      ? { cost: Number(spent.cost_usd || 0), tokens: Number(spent.tokens || 0) }
      : null;
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

  /** The card's editor, in the detail panel; Escape comes back to the card. */
  openCardEditor(id) {
    if (!this.isEditable()) return;
    this.panel.open(id, { edit: true, origin: "card" });
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

