// The board's keyboard: j/k or the arrows move between cards (board) or rows (list), Enter
// opens a card (the list renames its row), e edits, n adds, [ and ] move the focused subtask,
// ? shows the map of keys. Keys do nothing while someone types in a field or a dialog is open.
// Whatever the keyboard focuses carries `data-subtask-id`.

import { h } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./board.js").BoardView} BoardView */
/** @typedef {import("./board-list.js").ListView} ListView */

const SUBTASK = "[data-subtask-id]";

/**
 * The keys and what they do, in the help sheet's order: [keys, string key].
 * @type {[string[], string][]}
 */
export const KEY_MAP = [
  [["j", "↓"], "keys_next"],
  [["k", "↑"], "keys_previous"],
  [["←", "→"], "keys_column"],
  [["Enter"], "keys_open"],
  [["e"], "keys_edit"],
  [["n"], "keys_add"],
  [["["], "keys_move_up"],
  [["]"], "keys_move_down"],
  [["?"], "keys_help"],
  [["Esc"], "keys_close"],
];

/**
 * Is this key press meant for a field, a dialog or the browser rather than for the board?
 * @param {KeyboardEvent} event
 */
export function typing(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return true;
  const target = /** @type {HTMLElement | null} */ (event.target);
  if (target && target.closest && target.closest("input, textarea, select, [contenteditable]")) {
    return true;
  }
  return Boolean(document.querySelector("dialog[open]"));
}

export class BoardKeys {
  /**
   * @param {BoardView} board
   * @param {ListView} list
   * @param {() => boolean} listShown whether the list (not the columns) shows
   */
  constructor(board, list, listShown) {
    this.board = board;
    this.list = list;
    this.listShown = listShown;
    /** @type {HTMLDialogElement | null} */
    this.help = null;
    /** @type {Promise<unknown>} the moves asked for, one after the other */
    this.moves = Promise.resolve();
    document.addEventListener("keydown", (event) => this.onKey(event));
  }

  /** The cards or rows the keyboard walks through, in reading order. */
  items() {
    const inList = this.listShown();
    return /** @type {HTMLElement[]} */ ([...this.board.root.querySelectorAll(SUBTASK)]).filter(
      (el) =>
        Boolean(el.closest(".list-view")) === inList &&
        !el.closest("[hidden]") &&
        el.getClientRects().length > 0,
    );
  }

  /** The card or row holding the keyboard focus, if any. */
  focused() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement)) return null;
    const item = /** @type {HTMLElement | null} */ (active.closest(SUBTASK));
    return item && this.items().includes(item) ? item : null;
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key === "?" && !typing(event)) {
      event.preventDefault();
      this.openHelp();
      return;
    }
    if (typing(event) || !this.board.plan || this.board.root.getClientRects().length === 0) return;
    const current = this.focused();
    const onItem = current !== null && document.activeElement === current;
    const handled = this.handle(event.key, current, onItem);
    if (handled) event.preventDefault();
  }

  /**
   * @param {string} key
   * @param {HTMLElement | null} current
   * @param {boolean} onItem the card or row itself has the focus (not one of its buttons)
   * @returns {boolean} whether the key did something
   */
  handle(key, current, onItem) {
    switch (key) {
      case "j":
        return this.step(current, 1);
      case "k":
        return this.step(current, -1);
      // Arrows keep their usual meaning (scrolling) unless the keyboard is on the plan.
      case "ArrowDown":
        return current !== null && this.step(current, 1);
      case "ArrowUp":
        return current !== null && this.step(current, -1);
      case "ArrowLeft":
        return current !== null && !this.listShown() && this.column(current, -1);
      case "ArrowRight":
        return current !== null && !this.listShown() && this.column(current, 1);
      case "Enter":
        if (!onItem) return false;
        if (this.listShown()) this.list.startEdit(idOf(current));
        else open(current);
        return true;
      case "e":
        return current !== null && this.edit(current);
      case "n":
        return this.add();
      case "[":
        return current !== null && this.move(current, -1);
      case "]":
        return current !== null && this.move(current, 1);
      default:
        return false;
    }
  }

  /** Focus the next (1) or previous (-1) card; the first or last when none has the focus. */
  step(current, direction) {
    const items = this.items();
    if (!items.length) return false;
    const position = current ? items.indexOf(current) : -1;
    let next;
    if (position < 0) next = direction > 0 ? items[0] : items[items.length - 1];
    else next = items[Math.min(items.length - 1, Math.max(0, position + direction))];
    focusItem(next);
    return true;
  }

  /** Focus the card at the same height in the next column with cards, left or right. */
  column(current, direction) {
    const groups = [];
    for (const item of this.items()) {
      const group = groups.find((g) => g.parent === item.parentElement);
      if (group) group.items.push(item);
      else groups.push({ parent: item.parentElement, items: [item] });
    }
    const from = groups.findIndex((g) => g.items.includes(current));
    const to = groups[from + direction];
    if (from < 0 || !to) return false;
    const row = groups[from].items.indexOf(current);
    focusItem(to.items[Math.min(row, to.items.length - 1)]);
    return true;
  }

  edit(current) {
    if (!this.board.isEditable()) return false;
    if (this.listShown()) {
      this.list.startEdit(idOf(current));
      return true;
    }
    const button = /** @type {HTMLElement | null} */ (current.querySelector('[data-action="edit"]'));
    if (button) button.click();
    else open(current, { edit: true });
    return true;
  }

  add() {
    const button = /** @type {HTMLElement | null} */ (
      this.board.root.querySelector('[data-action="add"]')
    );
    if (!button || !this.board.isEditable()) return false;
    button.click();
    return true;
  }

  /**
   * Move the focused subtask before its previous or after its next neighbour in view. Moves
   * wait for the one before to be answered, so a key held down moves the subtask every time
   * rather than repeating a stale position.
   */
  move(current, direction) {
    if (!this.board.plan || !this.board.isEditable()) return false;
    const id = idOf(current);
    this.moves = this.moves.then(() => this.moveNow(id, direction));
    return true;
  }

  /** @param {number} id @param {number} direction */
  async moveNow(id, direction) {
    const plan = this.board.plan;
    const items = this.items();
    const item = items.find((el) => idOf(el) === id);
    if (!plan || !item) return;
    const siblings = items.filter((el) => el.parentElement === item.parentElement);
    const neighbour = siblings[siblings.indexOf(item) + direction];
    if (!neighbour) return; // already first or last
    const subtask = plan.subtasks.find((s) => s.id === id);
    const other = plan.subtasks.find((s) => s.id === idOf(neighbour));
    if (subtask && other) await this.board.actions.move(subtask, other.index);
    this.keepFocus(id);
  }

  /**
   * The move re-rendered the cards: if the keyboard lost its place, put it back on `id`.
   * @param {number} id
   */
  keepFocus(id) {
    const active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    const item = this.items().find((el) => idOf(el) === id);
    if (item) focusItem(item);
  }

  // --- help sheet ------------------------------------------------------------------------------

  openHelp() {
    if (!this.help) this.help = helpSheet();
    if (!this.help.open) this.help.showModal();
    const close = /** @type {HTMLElement | null} */ (this.help.querySelector("button"));
    if (close) close.focus();
  }
}

/** The dialog listing the keys; Esc or its button closes it. */
function helpSheet() {
  const rows = KEY_MAP.map(([keys, text]) =>
    h(
      "div",
      { class: "keys-row" },
      h(
        "dt",
        {},
        keys.map((key, position) => [position ? " " : null, h("kbd", { text: key })]),
      ),
      h("dd", { text: t(text) }),
    ),
  );
  const dialog = /** @type {HTMLDialogElement} */ (
    h(
      "dialog",
      { class: "dialog keys-help", "aria-labelledby": "keys-help-title" },
      h(
        "form",
        { method: "dialog", class: "dialog-form" },
        h("h2", { class: "dialog-title", id: "keys-help-title", text: t("keys_title") }),
        h("dl", { class: "keys-list" }, rows),
        h(
          "div",
          { class: "dialog-buttons" },
          h("button", { type: "submit", class: "btn btn-primary", text: t("close") }),
        ),
      ),
    )
  );
  document.body.append(dialog);
  return dialog;
}

/** @param {HTMLElement} item */
function idOf(item) {
  return Number(item.dataset.subtaskId);
}

/** @param {HTMLElement} item */
function focusItem(item) {
  if (!item.hasAttribute("tabindex")) item.tabIndex = -1;
  item.focus();
  item.scrollIntoView({ block: "nearest" });
}

/**
 * Ask for the card's details (the detail panel listens).
 * @param {HTMLElement} item
 * @param {{edit?: boolean}} [options]
 */
function open(item, { edit = false } = {}) {
  const detail = edit ? { id: idOf(item), edit: true } : { id: idOf(item) };
  item.dispatchEvent(new CustomEvent("subtask:open", { detail, bubbles: true }));
}
