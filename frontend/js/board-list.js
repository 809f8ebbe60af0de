// The plan as a list: one row per subtask (number from 1, title, state and the card's "blocked
// by" badge, profile, cost), for long plans. It shows the snapshot the board shows and follows
// every board render (the board's root fires "board:rendered"), so live updates need nothing
// of their own. It writes
// through the board's actions, like the board's own forms: a title is renamed in place, a row
// is moved with its buttons, by dragging, or from the keyboard (board-keys.js).

import { openBlockers } from "./board-blockers.js";
import { blockedChip, stateLabel } from "./board-card.js";
import { formatCost } from "./cost.js";
import { RowDragging } from "./board-list-drag.js";
import {
  captureFocus,
  flashElement,
  h,
  iconButton,
  replaceChildren,
  restoreFocus,
  syncChildren,
} from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/** @typedef {import("./board.js").BoardView} BoardView */


export class ListView {
  /** @param {BoardView} board */
  constructor(board) {
    this.board = board;
    this.active = false;
    /** @type {Map<number, {el: HTMLElement, sig: string | null}>} */
    this.rows = new Map();
    /** @type {Set<number>} subtask ids whose title is being edited */
    this.editing = new Set();
    /** @type {number | null} the row Tab reaches (a roving tabindex) */
    this.current = null;
    /** @type {Promise<unknown>} the moves asked for, one after the other */
    this.moves = Promise.resolve();
    this.list = h("ol", { class: "subtask-list", "aria-label": t("list_label") });
    this.section = h("div", { class: "list-view", hidden: true }, this.list);
    // Where the columns are: the board's header and add form stay above the list.
    board.columnsEl.after(this.section);
    board.root.addEventListener("board:rendered", (event) => {
      const detail = /** @type {CustomEvent} */ (event).detail;
      this.render(detail && Array.isArray(detail.flash) ? detail.flash : []);
    });
    this.list.addEventListener("focusin", (event) => {
      const row = /** @type {HTMLElement} */ (event.target).closest("[data-subtask-id]");
      if (row) this.setCurrent(Number(/** @type {HTMLElement} */ (row).dataset.subtaskId));
    });
    this.dragging = new RowDragging(this);
  }

  /** Show or hide the list (the board's columns hide while it shows). */
  setActive(active) {
    this.active = active;
    this.section.hidden = !active;
    this.board.root.classList.toggle("is-list", active);
    this.render();
  }

  /** @param {number[]} [flash] subtask ids to highlight */
  render(flash = []) {
    if (!this.active) return;
    const plan = this.board.plan;
    this.section.hidden = !plan;
    if (!plan) {
      this.rows.clear();
      this.editing.clear();
      replaceChildren(this.list);
      return;
    }
    const focus = captureFocus(this.list, "[data-subtask-id]");
    const editable = this.board.isEditable();
    if (!editable) this.editing.clear();
    const visible = plan.subtasks.filter((subtask) => !this.board.hidden.has(subtask.id));
    const elements = visible.map((subtask, position) =>
      this.rowFor(subtask, { editable, first: position === 0, last: position === visible.length - 1 }),
    );
    syncChildren(this.list, elements);
    const present = new Set(visible.map((subtask) => subtask.id));
    for (const id of [...this.rows.keys()]) {
      if (!present.has(id)) {
        this.rows.delete(id);
        this.editing.delete(id);
      }
    }
    if (this.current === null || !present.has(this.current)) {
      this.current = visible.length ? visible[0].id : null;
    }
    this.setCurrent(this.current);
    // Keep the keyboard where it was when a row moved or was rebuilt.
    restoreFocus(focus, (id) => this.rows.get(id)?.el);
    for (const id of flash) {
      const row = this.rows.get(id);
      if (row) flashElement(row.el);
    }
  }

  /** @param {number | null} id */
  setCurrent(id) {
    this.current = id;
    for (const [rowId, row] of this.rows) row.el.tabIndex = rowId === id ? 0 : -1;
  }

  /** @param {number} id */
  rowElement(id) {
    const row = this.rows.get(id);
    return row ? row.el : null;
  }

  /**
   * @param {SubtaskSnapshot} subtask
   * @param {{editable: boolean, first: boolean, last: boolean}} context
   */
  rowFor(subtask, context) {
    let row = this.rows.get(subtask.id);
    if (!row) {
      const el = h("li", {
        class: "list-row",
        dataset: { subtaskId: String(subtask.id) },
        tabindex: -1,
      });
      this.dragging.bindSource(el, subtask.id);
      row = { el, sig: null };
      this.rows.set(subtask.id, row);
    }
    const editing = this.editing.has(subtask.id);
    const el = row.el;
    el.dataset.state = subtask.state;
    el.classList.toggle("is-editing", editing);
    el.draggable = context.editable && !editing;
    if (editing && el.querySelector(".list-edit")) {
      // Keep what the person is typing; only the number follows the live plan.
      const number = el.querySelector(".list-num");
      if (number) number.textContent = String(subtask.index + 1);
      return el;
    }
    // The badge changes when a blocker finishes, moves or is renamed: part of the signature.
    const blockers = openBlockers(subtask, this.board.plan);
    const sig = JSON.stringify([
      subtask,
      context,
      editing,
      costOf(this.board, subtask.id),
      this.board.marks.edits.get(subtask.id) || "",
      blockers.map((s) => [s.index, s.name]),
    ]);
    if (sig !== row.sig) {
      row.sig = sig;
      this.fillRow(el, subtask, { ...context, blockers }, editing);
    }
    return el;
  }

  /**
   * @param {HTMLElement} el
   * @param {SubtaskSnapshot} subtask
   * @param {{editable: boolean, first: boolean, last: boolean, blockers: SubtaskSnapshot[]}} context
   * @param {boolean} editing
   */
  fillRow(el, subtask, { editable, first, last, blockers }, editing) {
    const named = (/** @type {string} */ key) => `${t(key)}: ${subtask.name}`;
    const cost = costOf(this.board, subtask.id);
    const title = editing
      ? this.titleForm(subtask)
      : h("span", {
          class: "list-title",
          text: subtask.name,
          title: subtask.name,
          ondblclick: () => this.startEdit(subtask.id),
        });
    replaceChildren(
      el,
      h("span", { class: "list-num", text: String(subtask.index + 1) }),
      title,
      h(
        "span",
        { class: "list-meta" },
        h(
          "span",
          { class: "list-state-cell" },
          h("span", {
            class: `pill pill-${subtask.state} list-state`,
            text: stateLabel(subtask.state),
          }),
          blockedChip(blockers),
        ),
        // Always there, empty or not, so that the badges line up from row to row.
        h(
          "span",
          { class: "list-agent" },
          subtask.agent
            ? h("span", {
                class: "chip chip-agent",
                text: `@${subtask.agent}`,
                title: t("agent_profile_chip", { name: subtask.agent }),
              })
            : null,
        ),
        cost ? h("span", { class: "list-cost", text: cost }) : null,
        this.editMark(subtask.id),
      ),
      editable && !editing
        ? h(
            "span",
            { class: "list-actions", role: "group", "aria-label": named("card_actions") },
            iconButton("rename", "edit", named("rename"), () => this.startEdit(subtask.id)),
            iconButton("up", "up", named("move_up"), () => this.moveBy(subtask.id, -1), first),
            iconButton("down", "down", named("move_down"), () => this.moveBy(subtask.id, 1), last),
          )
        : null,
    );
  }

  /**
   * Whether the agent saw a person's edit of this subtask: the board's mark, in a word.
   * @param {number} id
   */
  editMark(id) {
    const mark = this.board.marks.edits.get(id);
    if (!mark) return null;
    const pending = mark === "pending";
    return h("span", {
      class: `chip chip-${mark} list-seen`,
      dataset: { edit: mark },
      text: t(pending ? "list_edit_pending" : "list_edit_seen"),
      title: `${t(pending ? "edit_pending" : "edit_seen")}. ${t(
        pending ? "edit_pending_help" : "edit_seen_help",
      )}`,
    });
  }

  // --- renaming ------------------------------------------------------------------------------

  /** Rename the subtask `id` in place (Enter saves, Escape cancels, leaving the field saves). */
  startEdit(id) {
    if (!this.board.isEditable() || !this.rows.has(id)) return;
    this.editing.add(id);
    const row = this.rows.get(id);
    row.sig = null;
    this.render();
    const input = /** @type {HTMLInputElement | null} */ (row.el.querySelector(".list-edit input"));
    if (input) {
      input.focus();
      input.select();
    }
  }

  /** @param {number} id @param {{refocus?: boolean}} [options] */
  stopEdit(id, { refocus = true } = {}) {
    if (!this.editing.delete(id)) return;
    const row = this.rows.get(id);
    if (row) row.sig = null;
    this.render();
    if (refocus && row) row.el.focus();
  }

  /** @param {SubtaskSnapshot} subtask */
  titleForm(subtask) {
    const id = subtask.id;
    const input = h("input", {
      name: "name",
      class: "list-title-input",
      required: true,
      maxlength: 200,
      value: subtask.name,
      "aria-label": t("rename_subtask", { index: subtask.index + 1 }),
      "aria-describedby": `list-edit-error-${id}`,
    });
    const error = h("span", {
      class: "list-edit-error",
      id: `list-edit-error-${id}`,
      role: "alert",
      hidden: true,
    });
    const form = h("form", { class: "list-edit", novalidate: true }, input, error);
    let saving = false;
    const save = async (/** @type {boolean} */ fromBlur) => {
      if (saving || !this.editing.has(id)) return;
      const name = input.value.trim();
      const live = this.board.plan?.subtasks.find((s) => s.id === id);
      if (!live) return this.stopEdit(id, { refocus: false });
      if (!name) {
        if (fromBlur) return this.stopEdit(id, { refocus: false });
        error.textContent = t("name_required");
        error.hidden = false;
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return;
      }
      if (name === live.name) return this.stopEdit(id, { refocus: !fromBlur });
      saving = true;
      const ok = await this.board.actions.edit(live, { name });
      saving = false;
      if (ok) this.stopEdit(id, { refocus: !fromBlur });
      else if (!fromBlur) input.focus();
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      save(false);
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        this.stopEdit(id);
      }
    });
    input.addEventListener("input", () => {
      error.hidden = true;
      input.removeAttribute("aria-invalid");
    });
    input.addEventListener("blur", () => {
      if (input.isConnected) save(true);
    });
    return form;
  }

  // --- moving --------------------------------------------------------------------------------

  /**
   * Move the subtask `id` one row up (-1) or down (1) among the rows shown.
   * @param {number} id
   * @param {number} direction
   */
  moveBy(id, direction) {
    // One after the other: a second click reads the plan the first one's answer brought.
    this.moves = this.moves.then(() => this.moveNow(id, direction));
  }

  /** @param {number} id @param {number} direction */
  async moveNow(id, direction) {
    const plan = this.board.plan;
    if (!plan || !this.board.isEditable()) return;
    const visible = plan.subtasks.filter((s) => !this.board.hidden.has(s.id));
    const position = visible.findIndex((s) => s.id === id);
    const neighbour = visible[position + direction];
    if (position < 0 || !neighbour) return;
    // Up takes the neighbour's index; down too, since taking the row out shifts it up by one.
    await this.board.actions.move(visible[position], neighbour.index);
  }
}

// --- helpers ----------------------------------------------------------------------------------

/**
 * What the agent spent on a subtask, as the board's usage says ("" when nothing).
 * @param {BoardView} board
 * @param {number} id
 */
function costOf(board, id) {
  const spent = board.marks.spentOn(id);
  return spent ? formatCost(spent.cost, spent.tokens) : "";
}

