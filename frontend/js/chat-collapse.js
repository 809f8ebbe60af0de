// The session page's chat column can be folded away on wide screens, giving the board the
// whole width; the choice is remembered in this browser (localStorage). On narrow screens the
// chat and the board are tabs already, and the button is hidden.

import { h, icon } from "./dom.js";
import { t } from "./i18n.js";

export const CHAT_COLLAPSED_KEY = "planboard.chatCollapsed";

/** @returns {boolean} */
function remembered() {
  try {
    return window.localStorage.getItem(CHAT_COLLAPSED_KEY) === "1";
  } catch {
    return false; // storage refused (private mode): start open
  }
}

/** @param {boolean} collapsed */
function remember(collapsed) {
  try {
    if (collapsed) window.localStorage.setItem(CHAT_COLLAPSED_KEY, "1");
    else window.localStorage.removeItem(CHAT_COLLAPSED_KEY);
  } catch {
    // not remembered; the page still follows the click
  }
}

/**
 * Put the fold button after `anchor` (in the session bar) and apply the remembered choice to
 * `layout`.
 * @param {HTMLElement} layout the element whose class says the chat is folded
 * @param {Element} anchor
 */
export function setUpChatCollapse(layout, anchor) {
  const label = h("span");
  const button = h(
    "button",
    {
      type: "button",
      id: "chat-toggle",
      class: "btn btn-ghost btn-small chat-toggle",
      "aria-controls": "chat-pane",
    },
    icon("chat"),
    label,
  );
  /** @param {boolean} collapsed */
  const apply = (collapsed) => {
    layout.classList.toggle("chat-collapsed", collapsed);
    button.setAttribute("aria-expanded", String(!collapsed));
    label.textContent = t(collapsed ? "chat_show" : "chat_hide");
    button.title = t(collapsed ? "chat_show_help" : "chat_hide_help");
  };
  button.addEventListener("click", () => {
    const collapsed = !layout.classList.contains("chat-collapsed");
    apply(collapsed);
    remember(collapsed);
  });
  apply(remembered());
  anchor.after(button);
  return button;
}
