// One compact card of the board: its number (from 1), title (two lines at most), one quiet
// line of badges (state, what it still waits for, agent profile, cost, whether the agent saw a
// person's edit, the outcome once finished) and, for people who may edit, a small set of actions shown on hover
// or keyboard focus: start or finish, edit, and "more" (abandon, back to To do, move, delete).
// The description and expected outcome live in the detail panel (board-panel.js).
// The card element is the `li.card`; it carries `data-id` and `data-subtask-id` (the subtask's
// id) for the board, dragging and others marking cards.

import { h, icon, iconButton, replaceChildren } from "./dom.js";
import { formatTokens, formatUsd } from "./format.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanState} PlanState */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */

/**
 * What a card needs from its board.
 * @typedef {object} CardHooks
 * @property {(subtask: SubtaskSnapshot, state: PlanState) => void} setState
 * @property {(subtask: SubtaskSnapshot, direction: number) => void} moveWithinColumn
 * @property {(subtask: SubtaskSnapshot) => void} edit
 * @property {(subtask: SubtaskSnapshot) => void} remove
 * @property {(id: number | null) => void} setMenu which card's "more" menu is open
 */

/** A state's name in the page's language. @param {string} state */
export function stateLabel(state) {
  return t(`state_${state}`);
}

/**
 * People count from 1; the plan and the agent's tools keep 0-based indices.
 * @param {number} index
 */
export function cardNumber(index) {
  return `#${index + 1}`;
}

/** The link that opens a card's detail panel (and the address that remembers it). */
export function cardHash(id) {
  return `#subtask-${id}`;
}

/**
 * A cost for a card's badge: the shared money and token formats ("$0.025 · 12.4k").
 * @param {number} costUsd
 * @param {number} tokens
 */
export function shortCost(costUsd, tokens) {
  if (!tokens && !costUsd) return "";
  return `${formatUsd(costUsd)} · ${formatTokens(tokens)}`;
}

/**
 * The "blocked by #1, #3" badge a card and a list row show: what the subtask still waits for
 * (`board-blockers.js:openBlockers`), its names in the tooltip; null when nothing.
 * @param {SubtaskSnapshot[]} blockers
 */
export function blockedChip(blockers) {
  if (!blockers.length) return null;
  return h("span", {
    class: "chip chip-blocked",
    text: t("blocked_by_badge", { numbers: blockers.map((s) => cardNumber(s.index)).join(", ") }),
    title: t("blocked_by_badge_help", { names: blockers.map((s) => s.name).join(", ") }),
  });
}

/**
 * Fill `el` (the card's `li`) with the compact card of `subtask`.
 * @param {HTMLElement} el
 * @param {SubtaskSnapshot} subtask
 * @param {object} options
 * @param {boolean} options.editable
 * @param {boolean} options.first first in its column
 * @param {boolean} options.last last in its column
 * @param {boolean} options.menuOpen show the "more" menu open
 * @param {{cost: number, tokens: number} | null} options.spent
 * @param {HTMLElement | null} options.editMark
 * @param {SubtaskSnapshot[]} [options.blockers] what it waits for that is not finished yet
 * @param {CardHooks} hooks
 */
export function fillCard(el, subtask, options, hooks) {
  const { editable, spent, editMark, blockers = [] } = options;
  const finished = subtask.state === "done" || subtask.state === "abandoned";
  const cost = spent ? shortCost(spent.cost, spent.tokens) : "";
  replaceChildren(
    el,
    h(
      "div",
      { class: "card-head" },
      h(
        "h4",
        { class: "card-name" },
        h("a", {
          class: "card-open",
          href: cardHash(subtask.id),
          draggable: "false",
          title: subtask.name,
          text: subtask.name,
        }),
      ),
    ),
    finished && subtask.outcome
      ? h("p", { class: "card-outcome", title: subtask.outcome, text: subtask.outcome })
      : null,
    h(
      "div",
      { class: "card-meta" },
      h(
        "span",
        { class: "card-badges" },
        h("span", { class: "card-index", text: cardNumber(subtask.index) }),
        h(
          "span",
          { class: `card-state card-state-${subtask.state}`, title: stateLabel(subtask.state) },
          h("span", { class: "state-dot", "aria-hidden": "true" }),
          h("span", { class: "visually-hidden", text: stateLabel(subtask.state) }),
        ),
        blockedChip(blockers),
        subtask.agent
          ? h("span", {
              class: "chip chip-agent",
              text: `@${subtask.agent}`,
              title: t("agent_profile_chip", { name: subtask.agent }),
            })
          : null,
        cost
          ? h("span", {
              class: "chip chip-cost",
              text: cost,
              title: t("card_cost_help", { cost }),
            })
          : null,
        editMark,
      ),
      editable ? cardActions(subtask, options, hooks) : null,
    ),
  );
}

/**
 * @param {SubtaskSnapshot} subtask
 * @param {{first: boolean, last: boolean, menuOpen: boolean}} options
 * @param {CardHooks} hooks
 */
function cardActions(subtask, { first, last, menuOpen }, hooks) {
  const named = (key) => `${t(key)}: ${subtask.name}`;
  const setState = (state) => () => hooks.setState(subtask, state);
  const primary = [];
  if (subtask.state === "todo") {
    primary.push(iconButton("start", "play", named("start"), setState("in_progress")));
  }
  if (subtask.state === "in_progress") {
    primary.push(iconButton("finish", "check", named("finish"), setState("done")));
  }
  primary.push(iconButton("edit", "edit", named("edit"), () => hooks.edit(subtask)));
  /** @type {HTMLElement[]} */
  const items = [];
  if (subtask.state === "todo") {
    items.push(menuItem("finish", "check", t("finish"), setState("done")));
  }
  if (subtask.state === "todo" || subtask.state === "in_progress") {
    items.push(menuItem("abandon", "abandon", t("abandon"), setState("abandoned")));
  }
  if (subtask.state !== "todo") {
    items.push(menuItem("to-todo", "undo", t("back_to_todo"), setState("todo")));
  }
  // Moving keeps the menu open, so that a keyboard user can press "move down" again.
  items.push(
    menuItem("up", "up", t("move_up"), () => hooks.moveWithinColumn(subtask, -1), {
      disabled: first,
      keepOpen: true,
    }),
    menuItem("down", "down", t("move_down"), () => hooks.moveWithinColumn(subtask, 1), {
      disabled: last,
      keepOpen: true,
    }),
    menuItem("delete", "trash", t("delete"), () => hooks.remove(subtask), { danger: true }),
  );
  const menuId = `card-menu-${subtask.id}`;
  const menu = h(
    "div",
    { class: "card-menu", id: menuId, role: "menu", "aria-label": named("more_actions") },
    items,
  );
  menu.hidden = !menuOpen;
  const more = iconButton("more", "more", named("more_actions"), () => {
    hooks.setMenu(menu.hidden ? subtask.id : null);
  });
  more.setAttribute("aria-haspopup", "menu");
  more.setAttribute("aria-controls", menuId);
  more.setAttribute("aria-expanded", String(menuOpen));
  for (const item of items) {
    item.addEventListener("click", () => {
      if (!item.dataset.keepOpen) hooks.setMenu(null);
    });
  }
  menu.addEventListener("keydown", (event) => menuKeys(event, menu, more, hooks));
  return h(
    "div",
    { class: "card-actions", role: "toolbar", "aria-label": named("card_actions") },
    primary,
    h("span", { class: "card-more" }, more, menu),
  );
}

/**
 * Arrows move between the menu's items; Escape closes it and focuses "more" again.
 * @param {KeyboardEvent} event
 * @param {HTMLElement} menu
 * @param {HTMLElement} more
 * @param {CardHooks} hooks
 */
function menuKeys(event, menu, more, hooks) {
  const items = /** @type {HTMLButtonElement[]} */ ([
    ...menu.querySelectorAll("button:not([disabled])"),
  ]);
  const at = items.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
  if (event.key === "Escape") {
    event.preventDefault();
    event.stopPropagation();
    hooks.setMenu(null);
    more.focus();
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = items[(at + step + items.length) % items.length];
    if (next) next.focus();
  }
}

/**
 * @param {string} action
 * @param {string} iconName
 * @param {string} label
 * @param {() => void} onClick
 * @param {{disabled?: boolean, danger?: boolean, keepOpen?: boolean}} [options]
 */
function menuItem(action, iconName, label, onClick, options = {}) {
  const { disabled = false, danger = false, keepOpen = false } = options;
  return h(
    "button",
    {
      type: "button",
      role: "menuitem",
      class: danger ? "card-menu-item is-danger" : "card-menu-item",
      dataset: keepOpen ? { action, keepOpen: "1" } : { action },
      disabled,
      onclick: onClick,
    },
    icon(iconName),
    h("span", { text: label }),
  );
}
