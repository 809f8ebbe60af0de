// Every page: the language switch submits itself when a language is picked.

/** @type {NodeListOf<HTMLSelectElement>} */
const selects = document.querySelectorAll("select[data-autosubmit]");
for (const select of selects) {
  select.addEventListener("change", () => select.form.requestSubmit());
  /** @type {HTMLElement | null} */
  const button = select.form.querySelector("[data-autosubmit-button]");
  if (button) button.hidden = true;
}

// Signed-in pages: the header's inbox link shows a live count.
import { startInboxFeed } from "./inbox-feed.js";
import { localizeTimes } from "./i18n.js";

// Dates the server rendered read like the ones the scripts render.
localizeTimes();

/** @type {HTMLElement | null} */
const inboxLink = document.querySelector(".inbox-link");
if (inboxLink) startInboxFeed(inboxLink);
