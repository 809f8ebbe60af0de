// The plan's two views, board and list, behind one toggle above the board. The choice is
// remembered in this browser (localStorage); the keyboard (board-keys.js) works in both.

import { BoardKeys } from "./board-keys.js";
import { ListView } from "./board-list.js";

/** @typedef {import("./board.js").BoardView} BoardView */
/** @typedef {"board" | "list"} ViewName */

export const VIEW_KEY = "planboard.planView";

/** @returns {ViewName} the view this browser last chose */
export function rememberedView() {
  try {
    return window.localStorage.getItem(VIEW_KEY) === "list" ? "list" : "board";
  } catch {
    return "board"; // storage refused (private mode, policy): the board it is
  }
}

/** @param {ViewName} view */
function remember(view) {
  try {
    window.localStorage.setItem(VIEW_KEY, view);
  } catch {
    // Not remembered; the toggle still works for this page.
  }
}

/**
 * Wire the toggle `bar` (templates/planboard/session.html) to `board`: the list view, the
 * keyboard, and the help sheet's button.
 * @param {BoardView} board
 * @param {HTMLElement | null} bar
 */
export function mountBoardViews(board, bar) {
  const list = new ListView(board);
  /** @type {ViewName} */
  let view = rememberedView();
  const keys = new BoardKeys(board, list, () => view === "list");
  const buttons = bar
    ? /** @type {HTMLButtonElement[]} */ ([...bar.querySelectorAll("[data-view]")])
    : [];

  /** @param {ViewName} next */
  const show = (next) => {
    view = next;
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.view === next));
    }
    list.setActive(next === "list");
  };
  for (const button of buttons) {
    button.addEventListener("click", () => {
      const next = button.dataset.view === "list" ? "list" : "board";
      remember(next);
      show(next);
    });
  }
  const helpButton = bar ? bar.querySelector('[data-action="keys-help"]') : null;
  if (helpButton) helpButton.addEventListener("click", () => keys.openHelp());
  // The toggle shows with a plan only.
  const follow = () => {
    if (bar) bar.hidden = !board.plan;
  };
  board.root.addEventListener("board:rendered", follow);
  follow();
  show(view);
  return { list, keys, show };
}
