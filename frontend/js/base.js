// Every page: the language switch submits itself when a language is picked.
// This module imports nothing up front, so the switch works as soon as the page has parsed;
// the rest loads after.

/** @type {NodeListOf<HTMLSelectElement>} */
const selects = document.querySelectorAll("select[data-autosubmit]");
for (const select of selects) {
  select.addEventListener("change", () => select.form.requestSubmit());
  /** @type {HTMLElement | null} */
  const button = select.form.querySelector("[data-autosubmit-button]");
  if (button) button.hidden = true;
}

// Dates the server rendered read like the ones the scripts render.
import("./i18n.js").then(({ localizeTimes }) => localizeTimes());

// Signed-in pages: the header's inbox link shows a live count.
/** @type {HTMLElement | null} */
const inboxLink = document.querySelector(".inbox-link");
if (inboxLink) import("./inbox-feed.js").then(({ startInboxFeed }) => startInboxFeed(inboxLink));
