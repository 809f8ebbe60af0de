// The plan board: header, progress and four columns of subtask cards in plan order.
// It renders a snapshot and reports what the person wants through `actions`; it never talks
// to the server itself. Cards are keyed by subtask id and patched in place, so an open edit
// form or the keyboard focus survives live updates from the agent or other browsers.
// One card is drawn by board-card.js, the card's detail panel is board-panel.js; the header
// and the add panel are board-head.js (their forms board-forms.js), what the agent spent and
// saw board-marks.js, dragging cards board-drag.js.

import { openBlockers } from "./board-blockers.js";
import { fillCard, stateLabel } from "./board-card.js";
import { CardDragging } from "./board-drag.js";
import { setProfileSuggestions } from "./board-forms.js";
import { AddPanel, PlanHead } from "./board-head.js";
import { AgentMarks } from "./board-marks.js";
import { CardPanel } from "./board-panel.js";
import { STATES, isFinished } from "./board-state.js";
import { captureFocus, flashElement, h, restoreFocus, syncChildren } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanState} PlanState */
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
    this.hashFollowed = false;
    this.dragging = new CardDragging(this);
    // How often each card was highlighted: lets tests and debugging see who saw what change.
    this.highlighted = new Map();
    // What the agent spent and which people's edits it saw: shown on the header and cards.
    this.marks = new AgentMarks(() => {
      if (this.plan) this.render(this.plan);
    });
    this.head = new PlanHead(this);
    this.adder = new AddPanel(this);
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
    this.main = h(
      "div",
      { class: "board-main" },
      this.empty,
      this.head.el,
      this.adder.el,
      this.columnsEl,
    );
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
    const focus = captureFocus(this.root, ".card");
    this.plan = plan;
    this.root.classList.toggle("has-plan", Boolean(plan));
    this.empty.hidden = Boolean(plan);
    this.head.el.hidden = !plan;
    this.columnsEl.hidden = !plan;
    if (!plan) {
      for (const card of this.cards.values()) card.el.remove();
      this.cards.clear();
      this.editing.clear();
      this.head.reset();
      this.adder.render(false);
      this.panel.close({ refocus: false, remember: false });
      this.root.dispatchEvent(new CustomEvent("board:rendered", { detail: { flash: [] } }));
      return;
    }
    const editable = this.isEditable();
    if (!editable) {
      this.adder.adding = false;
      this.head.reset();
    }
    this.root.classList.toggle("is-editable", editable);
    this.head.render(editable);
    this.adder.render(editable);
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
    // A rebuilt button gives the focus to its successor, or the card's first control.
    restoreFocus(focus, (id) => this.cards.get(id)?.el, "button:not([disabled])");
    if (!this.hashFollowed) {
      // A link to a card opens it once the plan is on the board.
      this.hashFollowed = true;
      if (this.panel.urlHash) this.panel.followHash();
    }
    for (const id of flash) this.flash(id);
    if (flashHead) flashElement(this.head.el);
    // Other views of the plan (board-list.js, board-keys.js) follow every render.
    this.root.dispatchEvent(new CustomEvent("board:rendered", { detail: { flash } }));
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
    const spent = this.marks.spentOn(subtask.id);
    const blockers = openBlockers(subtask, this.plan);
    const mark = this.marks.edits.get(subtask.id) || "";
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
          editMark: this.marks.editMark(subtask.id, { short: true }),
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

  /** The agent profiles a card may name (the edit form's suggestions). */
  setProfiles(profiles) {
    setProfileSuggestions(this.root, profiles);
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

  // --- highlight -----------------------------------------------------------------------------

  flash(id) {
    const card = this.cards.get(id);
    if (!card) return;
    this.highlighted.set(id, (this.highlighted.get(id) || 0) + 1);
    flashElement(card.el);
  }
}
