// The board's forms: edit the plan's header, add a subtask, edit a card. Each form reads the
// live plan when it is submitted (others may have changed it meanwhile) and reports through
// the callbacks it is given; the board decides when a form is shown and what closing it means.

import { cardNumber } from "./board-card.js";
import { h, replaceChildren } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */

// The datalist of agent profiles the card form's "agent" field suggests.
const PROFILES_LIST = "pb-profiles";

/**
 * Fill (creating it in `root` the first time) the list of profiles the card form suggests.
 * @param {HTMLElement} root
 * @param {{name: string, title: string}[] | null | undefined} profiles
 */
export function setProfileSuggestions(root, profiles) {
  let list = document.getElementById(PROFILES_LIST);
  if (!list) {
    list = h("datalist", { id: PROFILES_LIST });
    root.append(list);
  }
  replaceChildren(
    list,
    (profiles || []).map((profile) => h("option", { value: profile.name, text: profile.title })),
  );
}

/**
 * The plan header's editor, filled from `plan`; saves only the fields that differ from the
 * live plan, and closes without a request when none does.
 * @param {object} options
 * @param {PlanSnapshot} options.plan
 * @param {() => PlanSnapshot} options.current the live plan
 * @param {(changed: Record<string, string>) => Promise<boolean>} options.save
 * @param {() => void} options.close
 */
export function planEditForm({ plan, current, save, close }) {
  const name = h("input", { name: "name", required: true, maxlength: 200, value: plan.name });
  const description = h("textarea", { name: "description", rows: 2, maxlength: 4000 });
  description.value = plan.description;
  const expected = h("textarea", { name: "expected_outcome", rows: 2, maxlength: 4000 });
  expected.value = plan.expected_outcome;
  const form = h(
    "form",
    { class: "plan-edit edit-form", "aria-label": t("edit_plan"), novalidate: true },
    labelled(t("plan_name"), name),
    nameError(name),
    labelled(t("description"), description),
    labelled(t("expected_outcome"), expected),
    formButtons(t("save"), close),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!nameGiven(name)) return;
    const changed = changedFields(current(), {
      name: name.value.trim(),
      description: description.value.trim(),
      expected_outcome: expected.value.trim(),
    });
    if (Object.keys(changed).length === 0) return close();
    if (await save(changed)) close();
  });
  bindFormKeys(form, close);
  return form;
}

/**
 * The add-subtask form. It stays open after a subtask is added, emptied for the next one.
 * Its position list is filled by `updatePositions`.
 * @param {object} options
 * @param {() => PlanSnapshot} options.current the live plan
 * @param {(fields: Record<string, string>, index: number | null) => Promise<boolean>} options.add
 * @param {() => void} options.close
 */
export function addSubtaskForm({ current, add, close }) {
  const name = h("input", {
    name: "name",
    required: true,
    maxlength: 200,
    placeholder: t("new_subtask_name"),
  });
  const description = h("textarea", { name: "description", rows: 2, maxlength: 4000 });
  const expected = h("textarea", { name: "expected_outcome", rows: 2, maxlength: 4000 });
  const position = h("select", { name: "position" });
  const form = h(
    "form",
    { class: "add-form edit-form", "aria-label": t("add_subtask"), novalidate: true },
    h("h3", { class: "add-title", text: t("add_subtask") }),
    labelled(t("subtask_name"), name),
    nameError(name),
    labelled(t("description"), description),
    labelled(t("expected_outcome"), expected),
    labelled(t("position"), position),
    formButtons(t("add"), close),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const beforeId = position.value ? Number(position.value) : null;
    const before = beforeId === null ? null : current().subtasks.find((s) => s.id === beforeId);
    const fields = {
      name: name.value.trim(),
      description: description.value.trim(),
      expected_outcome: expected.value.trim(),
    };
    if (!nameGiven(name)) return;
    const ok = await add(fields, before ? before.index : null);
    if (ok) {
      // Stay open for the next one: adding several steps in a row is common.
      form.reset();
      name.focus();
    }
  });
  bindFormKeys(form, close);
  return form;
}

/**
 * The add form's position list, following the live plan. Its values are subtask ids, so a
 * choice stays right when others reorder meanwhile.
 * @param {HTMLFormElement} form
 * @param {PlanSnapshot} plan
 */
export function updatePositions(form, plan) {
  const select = /** @type {HTMLSelectElement} */ (form.querySelector("select[name=position]"));
  const chosen = select.value;
  replaceChildren(
    select,
    h("option", { value: "", text: t("position_end") }),
    plan.subtasks.map((subtask) =>
      h("option", {
        value: String(subtask.id),
        text: t("position_before", { index: subtask.index + 1, name: subtask.name }),
      }),
    ),
  );
  select.value = [...select.options].some((option) => option.value === chosen) ? chosen : "";
}

/**
 * A card's editor, filled from `subtask`: its texts, the outcome once it is finished, and the
 * agent profile that should do it.
 * @param {object} options
 * @param {SubtaskSnapshot} options.subtask
 * @param {() => SubtaskSnapshot} options.current the live subtask
 * @param {(subtask: SubtaskSnapshot, changed: Record<string, string>) => Promise<boolean>}
 *   options.save
 * @param {() => void} options.close
 */
export function cardEditForm({ subtask, current, save, close }) {
  const name = h("input", { name: "name", required: true, maxlength: 200, value: subtask.name });
  const description = h("textarea", { name: "description", rows: 2, maxlength: 4000 });
  description.value = subtask.description;
  const expected = h("textarea", { name: "expected_outcome", rows: 2, maxlength: 4000 });
  expected.value = subtask.expected_outcome;
  // The outcome is only meaningful once the subtask is finished.
  const hasOutcome = subtask.state === "done" || subtask.state === "abandoned";
  const outcome = hasOutcome
    ? h("textarea", { name: "outcome", rows: 2, maxlength: 4000 })
    : null;
  if (outcome) outcome.value = subtask.outcome;
  // The agent profile that should do it ("" = the session's default).
  const agent = h("input", {
    name: "agent",
    maxlength: 50,
    value: subtask.agent || "",
    list: PROFILES_LIST,
    placeholder: t("agent_profile_default"),
  });
  const form = h(
    "form",
    {
      class: "card-edit edit-form",
      "aria-label": `${t("edit")}: ${subtask.name}`,
      novalidate: true,
    },
    h("span", { class: "card-index", text: cardNumber(subtask.index) }),
    labelled(t("subtask_name"), name),
    nameError(name),
    labelled(t("description"), description),
    labelled(t("expected_outcome"), expected),
    outcome ? labelled(t("outcome"), outcome) : null,
    labelled(t("agent_profile"), agent),
    formButtons(t("save"), close),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!nameGiven(name)) return;
    const live = current();
    const values = {
      name: name.value.trim(),
      description: description.value.trim(),
      expected_outcome: expected.value.trim(),
    };
    if (outcome) values.outcome = outcome.value.trim();
    values.agent = agent.value.trim();
    const changed = changedFields({ ...live, agent: live.agent || "" }, values);
    if (Object.keys(changed).length === 0) return close();
    if (await save(live, changed)) close();
  });
  bindFormKeys(form, close);
  return form;
}

/** Focus the control for `action` (`data-action`) inside `container`, if it is there. */
export function focusAction(container, action) {
  const target = container && container.querySelector(`[data-action="${action}"]`);
  if (target) target.focus();
}

let errorIds = 0;

/**
 * The message under a name field, shown by `nameGiven` (a blank name is refused by the form,
 * by the field, before any request); typing in the field hides it again.
 * @param {HTMLInputElement} input
 */
function nameError(input) {
  errorIds += 1;
  const message = h("p", { class: "field-error", id: `name-error-${errorIds}`, hidden: true });
  input.setAttribute("aria-describedby", message.id);
  input.addEventListener("input", () => {
    if (!input.value.trim()) return;
    message.hidden = true;
    input.removeAttribute("aria-invalid");
  });
  return message;
}

/**
 * Whether the name field holds a name; if not, its message says so and it takes the focus.
 * @param {HTMLInputElement} input
 */
function nameGiven(input) {
  if (input.value.trim()) return true;
  const message = document.getElementById(input.getAttribute("aria-describedby") || "");
  if (message) {
    message.textContent = t("name_required");
    message.hidden = false;
    message.setAttribute("role", "alert");
  }
  input.setAttribute("aria-invalid", "true");
  input.focus();
  return false;
}

function labelled(text, control) {
  return h("label", { class: "field" }, h("span", { class: "field-label", text }), control);
}

function formButtons(submitText, onCancel) {
  return h(
    "div",
    { class: "form-buttons" },
    h("button", { type: "submit", class: "btn btn-primary", text: submitText }),
    h("button", { type: "button", class: "btn", text: t("cancel"), onclick: onCancel }),
  );
}

/** Escape cancels, Ctrl/Cmd+Enter saves. */
function bindFormKeys(form, onCancel) {
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      onCancel();
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
}

function changedFields(current, values) {
  const changed = {};
  for (const [key, value] of Object.entries(values)) {
    if ((current[key] || "") !== value) changed[key] = value;
  }
  return changed;
}
