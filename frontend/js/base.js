// Every page: the language switch submits itself when a language is picked.

/** @type {NodeListOf<HTMLSelectElement>} */
const selects = document.querySelectorAll("select[data-autosubmit]");
for (const select of selects) {
  select.addEventListener("change", () => select.form.requestSubmit());
  /** @type {HTMLElement | null} */
  const button = select.form.querySelector("[data-autosubmit-button]");
  if (button) button.hidden = true;
}
