// Every page: the language switch submits itself when a language is picked.

for (const select of document.querySelectorAll("select[data-autosubmit]")) {
  select.addEventListener("change", () => select.form.requestSubmit());
  const button = select.form.querySelector("[data-autosubmit-button]");
  if (button) button.hidden = true;
}
