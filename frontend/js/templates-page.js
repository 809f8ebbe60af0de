// The Templates pages: asks before a delete, and on a template's form adds subtask rows and
// moves them up and down (rewriting the formset's position numbers, which work without it,
// and the "waits for" numbers that name rows by them, so a dependency follows its row).

/** @type {NodeListOf<HTMLFormElement>} */
const confirming = document.querySelectorAll("form[data-confirm]");
for (const form of confirming) {
  form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm || "")) event.preventDefault();
  });
}

const rows = document.getElementById("template-rows");
/** @type {HTMLTemplateElement | null} */
const blank = document.querySelector("#template-row-blank");
/** @type {HTMLInputElement | null} */
const total = document.querySelector("input[name=subtasks-TOTAL_FORMS]");

/** @returns {HTMLElement[]} */
function rowList() {
  return rows ? Array.from(rows.querySelectorAll(":scope > [data-row]")) : [];
}

/**
 * Rewrite each row's "waits for" numbers from the rows' previous numbers to their new ones.
 * @param {HTMLElement[]} list the rows in their new order
 */
function followMoves(list) {
  /** @type {Map<string, string>} */
  const moved = new Map();
  list.forEach((row, index) => {
    if (row.dataset.number) moved.set(row.dataset.number, String(index + 1));
    row.dataset.number = String(index + 1);
  });
  for (const row of list) {
    /** @type {HTMLInputElement | null} */
    const waits = row.querySelector("input[name$=-waits_for]");
    if (!waits || !waits.value.trim()) continue;
    // Anything that is not a row's number is left as typed: the form says what is wrong.
    waits.value = waits.value
      .split(/[\s,#]+/)
      .filter(Boolean)
      .map((part) => moved.get(part) || part)
      .join(", ");
  }
}

/** Positions follow the rows' order on the page; the first "up" and last "down" are off. */
function renumber() {
  const list = rowList();
  followMoves(list);
  list.forEach((row, index) => {
    /** @type {HTMLInputElement | null} */
    const order = row.querySelector("input[name$=-ORDER]");
    /** @type {HTMLInputElement | null} */
    const name = row.querySelector("input[name$=-name]");
    // A row left blank keeps no position, so the form still sees it as unused and skips it.
    if (order) order.value = name && name.value.trim() ? String(index + 1) : "";
    const number = row.querySelector(".template-row-number");
    if (number) number.textContent = `#${index + 1}`;
    /** @type {NodeListOf<HTMLButtonElement>} */
    const moves = row.querySelectorAll("button[data-move]");
    for (const button of moves) {
      button.hidden = false;
      const step = Number(button.dataset.move);
      button.disabled = (step < 0 && index === 0) || (step > 0 && index === list.length - 1);
    }
    /** @type {HTMLInputElement | null} */
    const removed = row.querySelector("input[name$=-DELETE]");
    row.classList.toggle("is-removed", Boolean(removed && removed.checked));
  });
}

if (rows && blank && total) {
  rows.classList.add("scripted");
  rows.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    /** @type {HTMLButtonElement | null} */
    const button = target && target.closest("button[data-move]");
    if (!button) return;
    const row = button.closest("[data-row]");
    if (Number(button.dataset.move) < 0 && row.previousElementSibling) {
      row.previousElementSibling.before(row);
    } else if (Number(button.dataset.move) > 0 && row.nextElementSibling) {
      row.nextElementSibling.after(row);
    }
    renumber();
    button.focus();
  });
  rows.addEventListener("change", renumber);

  /** @type {HTMLButtonElement | null} */
  const add = document.querySelector("button[data-add-row]");
  if (add) {
    add.hidden = false;
    add.addEventListener("click", () => {
      const index = Number(total.value);
      // A copy of the blank row (nodes, never an HTML string), its fields numbered like
      // Django's formset numbers them.
      const copy = /** @type {DocumentFragment} */ (blank.content.cloneNode(true));
      for (const element of copy.querySelectorAll("[name], [id], [for]")) {
        for (const attribute of ["name", "id", "for"]) {
          const value = element.getAttribute(attribute);
          if (value) element.setAttribute(attribute, value.replace(/__prefix__/g, String(index)));
        }
      }
      rows.append(copy);
      total.value = String(index + 1);
      const empty = document.querySelector(".template-no-rows");
      if (empty) empty.remove();
      renumber();
      /** @type {HTMLInputElement | null} */
      const name = rows.querySelector(`[name="subtasks-${index}-name"]`);
      if (name) name.focus();
    });
  }
  renumber();
}
