// Drag and drop on the board: cards are dragged within and between the state columns, a
// marker shows where a drop lands, and a drop becomes a plan position plus, across columns, a
// state change, reported through the board's `change` action. Keyboard users have the cards'
// buttons instead (board.js).

import { h } from "./dom.js";

/** @typedef {import("./types.js").PlanState} PlanState */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/** @typedef {import("./board.js").BoardView} BoardView */

export class CardDragging {
  /** @param {BoardView} board */
  constructor(board) {
    this.board = board;
    /** @type {number | null} the card being dragged */
    this.dragId = null;
    /** @type {HTMLElement | null} */
    this.marker = null;
  }

  /** Let the card `el` be dragged while the plan can be edited and the card is not. */
  bindSource(el) {
    el.addEventListener("dragstart", (event) => {
      const id = Number(el.dataset.id);
      if (!this.board.isEditable() || this.board.editing.has(id)) {
        event.preventDefault();
        return;
      }
      this.dragId = id;
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", String(id));
      requestAnimationFrame(() => el.classList.add("dragging"));
    });
    el.addEventListener("dragend", () => this.end());
  }

  /**
   * Let a card be dropped into the column `section` (cards in `list`) of state `state`.
   * @param {HTMLElement} section
   * @param {HTMLElement} list
   * @param {PlanState} state
   */
  bindTarget(section, list, state) {
    section.addEventListener("dragover", (event) => {
      if (this.dragId === null) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      section.classList.add("drop-target");
      const before = itemAfterPointer(list, ".card", event.clientY);
      placeMarker(list, this.dropMarker(), before);
    });
    section.addEventListener("dragleave", (event) => {
      if (!section.contains(/** @type {Node | null} */ (event.relatedTarget))) {
        section.classList.remove("drop-target");
        if (this.marker && section.contains(this.marker)) this.marker.remove();
      }
    });
    section.addEventListener("drop", (event) => {
      if (this.dragId === null) return;
      event.preventDefault();
      const id = this.dragId;
      const before = itemAfterPointer(list, ".card", event.clientY);
      this.end();
      this.dropAt(id, state, before ? Number(before.dataset.id) : null);
    });
  }

  dropMarker() {
    if (!this.marker) this.marker = h("li", { class: "drop-marker", "aria-hidden": "true" });
    return this.marker;
  }

  /** Forget the drag and clear what it showed. */
  end() {
    this.dragId = null;
    if (this.marker) this.marker.remove();
    for (const column of Object.values(this.board.columns)) {
      column.section.classList.remove("drop-target");
    }
    for (const card of this.board.cards.values()) card.el.classList.remove("dragging");
  }

  /**
   * A drop before card `beforeId` (or at the end of the column when null) in column `state`
   * becomes a plan index plus, across columns, a state change.
   * @param {number} id
   * @param {PlanState} state
   * @param {number | null} beforeId
   */
  dropAt(id, state, beforeId) {
    const { plan, hidden, actions } = this.board;
    const dragged = plan.subtasks.find((s) => s.id === id);
    if (!dragged) return;
    const rest = plan.subtasks.filter((s) => s.id !== id);
    let index;
    if (beforeId !== null && beforeId !== id) {
      index = rest.findIndex((s) => s.id === beforeId);
    } else {
      const inColumn = rest.filter((s) => s.state === state && !hidden.has(s.id));
      // Empty column: keep the plan position, only the state changes.
      index = inColumn.length ? rest.indexOf(inColumn[inColumn.length - 1]) + 1 : dragged.index;
      if (beforeId === id) index = dragged.index;
    }
    /** @type {{index?: number, state?: PlanState}} */
    const change = {};
    if (index >= 0 && index !== dragged.index) change.index = index;
    if (state !== dragged.state) change.state = state;
    if (Object.keys(change).length) actions.change(dragged, change);
  }
}

/**
 * The first of `list`'s items (`selector`, the one dragged left out) whose middle lies below
 * the pointer: the drop goes before it; null: at the end.
 * @param {HTMLElement} list
 * @param {string} selector
 * @param {number} clientY
 * @returns {HTMLElement | null}
 */
export function itemAfterPointer(list, selector, clientY) {
  for (const item of list.querySelectorAll(`${selector}:not(.dragging)`)) {
    const box = item.getBoundingClientRect();
    if (clientY < box.top + box.height / 2) return /** @type {HTMLElement} */ (item);
  }
  return null;
}

/**
 * Show the drop marker before `before` (at the end of `list` when null), moving it only when
 * it is not there already.
 * @param {HTMLElement} list
 * @param {HTMLElement} marker
 * @param {HTMLElement | null} before
 */
export function placeMarker(list, marker, before) {
  if (before) {
    if (marker.nextSibling !== before) list.insertBefore(marker, before);
  } else if (list.lastChild !== marker) {
    list.append(marker);
  }
}
