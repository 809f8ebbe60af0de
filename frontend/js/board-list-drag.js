// Dragging rows of the list view (board-list.js): a marker shows where a drop lands, and a
// drop becomes a plan position, written through the board's `move` action. Keyboard users
// have the rows' buttons and the keys instead.

import { itemAfterPointer, placeMarker } from "./board-drag.js";
import { h } from "./dom.js";

/** @typedef {import("./board-list.js").ListView} ListView */

export class RowDragging {
  /** @param {ListView} view */
  constructor(view) {
    this.view = view;
    /** @type {number | null} the row being dragged */
    this.dragId = null;
    /** @type {HTMLElement | null} */
    this.marker = null;
    const list = view.list;
    list.addEventListener("dragover", (event) => {
      if (this.dragId === null) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      const before = itemAfterPointer(list, ".list-row", event.clientY);
      placeMarker(list, this.dropMarker(), before);
    });
    list.addEventListener("drop", (event) => {
      if (this.dragId === null) return;
      event.preventDefault();
      const id = this.dragId;
      const before = itemAfterPointer(list, ".list-row", event.clientY);
      this.end();
      this.dropBefore(id, before ? Number(before.dataset.subtaskId) : null);
    });
  }

  /**
   * Let the row `el` of subtask `id` be dragged while the plan can be edited and the row is
   * not being renamed.
   * @param {HTMLElement} el
   * @param {number} id
   */
  bindSource(el, id) {
    el.addEventListener("dragstart", (event) => {
      if (!this.view.board.isEditable() || this.view.editing.has(id)) {
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

  dropMarker() {
    if (!this.marker) this.marker = h("li", { class: "drop-marker", "aria-hidden": "true" });
    return this.marker;
  }

  /** Forget the drag and clear what it showed. */
  end() {
    this.dragId = null;
    if (this.marker) this.marker.remove();
    for (const row of this.view.rows.values()) row.el.classList.remove("dragging");
  }

  /**
   * A drop before the row `beforeId` (at the end when null) becomes a plan index.
   * @param {number} id
   * @param {number | null} beforeId
   */
  dropBefore(id, beforeId) {
    const { plan, actions } = this.view.board;
    const dragged = plan && plan.subtasks.find((s) => s.id === id);
    if (!dragged || beforeId === id) return;
    const rest = plan.subtasks.filter((s) => s.id !== id);
    const index = beforeId === null ? rest.length : rest.findIndex((s) => s.id === beforeId);
    if (index >= 0 && index !== dragged.index) actions.move(dragged, index);
  }
}
