// Tiny DOM helpers. User data only ever becomes text nodes or attribute values, never markup.

/**
 * h("button", {class: "x", "aria-label": "Start", onclick: fn}, "text", child)
 * `text` sets textContent; `dataset` fills data-*; `style` ({width: "5%"}) sets properties;
 * on* props add listeners.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "text") element.textContent = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    // Through the CSSOM: a style attribute would be blocked by the Content-Security-Policy.
    else if (key === "style") Object.assign(element.style, value);
    else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else if (key === "value") element.value = value;
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(element) {
  while (element.firstChild) element.firstChild.remove();
}

export function replaceChildren(element, ...children) {
  clear(element);
  append(element, children);
}

const SVG_NS = "http://www.w3.org/2000/svg";

// Simple line icons drawn for Planboard on a 24×24 grid.
const ICONS = {
  download: "M12 4v11 M7 10.5l5 5l5-5 M5 19.5h14",
  play: "M8 5.5v13l10.5-6.5z",
  check: "M5 12.5l4.5 4.5L19 7.5",
  abandon: "M12 3.5a8.5 8.5 0 1 0 0 17a8.5 8.5 0 1 0 0-17z M6 6l12 12",
  undo: "M9 14L4.5 9.5 9 5 M4.5 9.5h10a5 5 0 0 1 0 10H11",
  up: "M12 19V5 M6 11l6-6 6 6",
  down: "M12 5v14 M6 13l6 6 6-6",
  edit: "M4 20h4L19 9l-4-4L4 16z M13 7l4 4",
  trash: "M4.5 7h15 M10 11v6 M14 11v6 M6.5 7l1 13h9l1-13 M9.5 7V4.5h5V7",
  plus: "M12 5v14 M5 12h14",
  stop: "M7 7h10v10H7z",
  send: "M4.5 12L20 4.5 15 20l-3-6.5z M12 13.5L20 4.5",
  first: "M6 5v14 M18 6l-8 6 8 6z",
  prev: "M16 6l-8 6 8 6z",
  next: "M8 6l8 6-8 6z",
  last: "M18 5v14 M6 6l8 6-8 6z",
  pause: "M8 5.5v13 M16 5.5v13",
  tool: "M14.5 6a4 4 0 0 0-5 5L4 16.5 7.5 20l5.5-5.5a4 4 0 0 0 5-5l-2.5 2.5-2.5-.5-.5-2.5z",
  flag: "M6 21V4 M6 4h11l-2 4 2 4H6",
  paperclip: "M16.5 7.5l-7 7a2 2 0 0 0 3 3l7.5-7.5a4 4 0 0 0-6-6L6.5 11.5a6 6 0 0 0 8.5 8.5l5-5",
  sparkle: "M12 3l2 6 6 2-6 2-2 6-2-6-6-2 6-2z",
  close: "M6 6l12 12 M18 6L6 18",
  more: "M4.5 12a1.75 1.75 0 1 0 3.5 0a1.75 1.75 0 1 0-3.5 0z M10.25 12a1.75 1.75 0 1 0 3.5 0a1.75 1.75 0 1 0-3.5 0z M16 12a1.75 1.75 0 1 0 3.5 0a1.75 1.75 0 1 0-3.5 0z",
  chat: "M4.5 5.5h15v10h-9l-4 3.5v-3.5h-2z",
};

const FILLED = new Set(["play", "stop", "first", "prev", "next", "last", "more"]);

export function icon(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.classList.add("icon");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICONS[name] || "");
  if (FILLED.has(name)) path.classList.add("filled");
  svg.append(path);
  return svg;
}

/**
 * A small button showing only an icon, named for screen readers and on hover by `label`.
 * @param {string} action its `data-action`
 * @param {string} iconName
 * @param {string} label
 * @param {() => void} onClick
 * @param {boolean} [disabled]
 */
export function iconButton(action, iconName, label, onClick, disabled = false) {
  return h(
    "button",
    {
      type: "button",
      class: "btn icon-btn",
      dataset: { action },
      "aria-label": label,
      title: label,
      disabled,
      onclick: onClick,
    },
    icon(iconName),
  );
}

/**
 * Put `elements` into `parent` in this order, moving only what is out of place (an element
 * that stays keeps its focus and its running transitions).
 * @param {Element} parent
 * @param {Element[]} elements
 */
export function syncChildren(parent, elements) {
  elements.forEach((element, position) => {
    if (parent.children[position] !== element) {
      parent.insertBefore(element, parent.children[position] || null);
    }
  });
  while (parent.children.length > elements.length) parent.lastElementChild?.remove();
}

const FLASH_MS = 2400;

/**
 * Briefly highlight what just changed (the `flash` class's animation).
 * @param {HTMLElement & {flashTimer?: number}} element
 */
export function flashElement(element) {
  element.classList.remove("flash");
  // Reading layout restarts the CSS animation when the same element changes twice quickly.
  void element.offsetWidth;
  element.classList.add("flash");
  clearTimeout(element.flashTimer);
  element.flashTimer = window.setTimeout(() => element.classList.remove("flash"), FLASH_MS);
}

/**
 * Where the keyboard is inside `container` before a re-render: the focused element, the
 * subtask of the `item` (a CSS selector: a card or a row) around it, and its action.
 * @param {HTMLElement} container
 * @param {string} item
 * @returns {{container: HTMLElement, element: HTMLElement, id: number | null,
 *   action: string | undefined} | null}
 */
export function captureFocus(container, item) {
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || !container.contains(active)) return null;
  const around = /** @type {HTMLElement | null} */ (active.closest(item));
  return {
    container,
    element: active,
    id: around ? Number(around.dataset.subtaskId) : null,
    action: active.dataset ? active.dataset.action : undefined,
  };
}

/**
 * Put the keyboard back after a re-render. When the focused control was rebuilt, focus the
 * same action on its item (so "move up" can be pressed again), else `fallback` in it, else
 * the item itself; a control outside any item (a header's) by the same action in the container.
 * @param {ReturnType<typeof captureFocus>} focus
 * @param {(id: number) => HTMLElement | null | undefined} itemFor
 * @param {string} [fallback] a selector inside the item
 */
export function restoreFocus(focus, itemFor, fallback = "") {
  if (!focus) return;
  if (focus.element.isConnected) {
    if (document.activeElement !== focus.element) focus.element.focus();
    return;
  }
  if (focus.id === null) {
    const same = focus.action
      ? focus.container.querySelector(`[data-action="${focus.action}"]:not([disabled])`)
      : null;
    if (same instanceof HTMLElement) same.focus();
    return;
  }
  const item = itemFor(focus.id);
  if (!item) return;
  const same = focus.action
    ? item.querySelector(`[data-action="${focus.action}"]:not([disabled])`)
    : null;
  const other = fallback ? item.querySelector(fallback) : null;
  /** @type {HTMLElement} */ (same || other || item).focus();
}
