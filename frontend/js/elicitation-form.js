// A tool's question to a person (MCP elicitation): a form built from the server's
// `requested_schema` (a flat object of strings, numbers, booleans and choices), or a URL to
// open, with Accept / Decline / Cancel. Everything the server wrote — its message, titles,
// descriptions, choice labels, the URL — is set as text or as a property, never as markup.
// The server checks the answer again (POST /api/elicitations/{id}/answer/).

import { h } from "./dom.js";
import { formatWhen, t } from "./i18n.js";

/** @typedef {Record<string, any>} Elicitation */
/** @typedef {Record<string, any>} Property */

/** `(value, label)` pairs of a choice property (for an array: of its items), or null. */
export function choicesOf(prop) {
  const source = prop.type === "array" ? prop.items || {} : prop;
  if (Array.isArray(source.enum)) {
    const names = prop.type !== "array" && Array.isArray(prop.enumNames) ? prop.enumNames : null;
    return source.enum.map((value, i) => [String(value), String(names ? names[i] : value)]);
  }
  const options = prop.type === "array" ? source.anyOf : source.oneOf;
  if (Array.isArray(options)) {
    return options.map((option) => [String(option.const), String(option.title || option.const)]);
  }
  return null;
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** One field's control and how to read its value (undefined: left empty). */
function fieldControl(name, prop, required) {
  const id = `elicit-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const choices = choicesOf(prop);
  if (prop.type === "array" && choices) {
    const chosen = new Set(Array.isArray(prop.default) ? prop.default.map(String) : []);
    const boxes = choices.map(([value, label]) => {
      const box = h("input", { type: "checkbox", value, name });
      box.checked = chosen.has(value);
      return h("label", { class: "elicit-choice" }, box, h("span", { text: label }));
    });
    const group = h("div", { class: "elicit-choices", role: "group", id }, boxes);
    const read = () =>
      boxes.map((label) => label.querySelector("input")).filter((box) => box.checked).map((box) => box.value);
    return { control: group, id, read, group: true };
  }
  if (choices) {
    const select = h(
      "select",
      { id, name, required },
      required ? null : h("option", { value: "", text: "—" }),
      choices.map(([value, label]) => h("option", { value, text: label })),
    );
    if (typeof prop.default === "string") select.value = prop.default;
    else if (required && choices.length) select.value = "";
    const read = () => (select.value === "" ? undefined : select.value);
    return { control: select, id, read };
  }
  if (prop.type === "boolean") {
    const box = h("input", { type: "checkbox", id, name });
    box.checked = prop.default === true;
    return { control: box, id, read: () => box.checked, inline: true };
  }
  if (prop.type === "number" || prop.type === "integer") {
    const input = h("input", {
      type: "number",
      id,
      name,
      required,
      step: prop.type === "integer" ? "1" : "any",
      min: typeof prop.minimum === "number" ? prop.minimum : null,
      max: typeof prop.maximum === "number" ? prop.maximum : null,
    });
    if (typeof prop.default === "number") input.value = String(prop.default);
    const read = () => (input.value.trim() === "" ? undefined : Number(input.value));
    return { control: input, id, read };
  }
  const type = INPUT_TYPES[prop.format] || "text";
  const input = h("input", {
    type,
    id,
    name,
    required,
    minlength: typeof prop.minLength === "number" ? prop.minLength : null,
    maxlength: typeof prop.maxLength === "number" ? prop.maxLength : null,
  });
  if (typeof prop.default === "string") input.value = prop.default;
  const read = () => {
    const value = input.value;
    if (value === "") return undefined;
    // A local date and time becomes an ISO 8601 moment (with its zone) for the server.
    if (type === "datetime-local") {
      const moment = new Date(value);
      return Number.isNaN(moment.getTime()) ? value : moment.toISOString();
    }
    return value;
  };
  return { control: input, id, read };
}

/**
 * The card of one waiting elicitation.
 * @param {Elicitation} record
 * @param {{editable: boolean, onAnswer?: (id: number, body: {action: string,
 *   content?: Record<string, any>}) => Promise<boolean | string>}} options
 */
export function elicitationCard(record, { editable, onAnswer }) {
  const who = record.tool_name || record.toolset || "";
  const card = h(
    "div",
    {
      class: "elicitation",
      role: "group",
      // The inbox links here (`#elicitation-<id>`).
      id: `elicitation-${record.id}`,
      dataset: { elicitation: String(record.id), mode: record.mode },
    },
    h("p", { class: "elicit-title", text: t("elicit_title", { tool: who }) }),
    h("p", { class: "elicit-message", text: record.message || "" }),
  );
  const fields = [];
  const form = h("form", { class: "elicit-form", novalidate: true });
  if (record.mode === "url") {
    const url = String(record.url || "");
    const link = h("a", { class: "elicit-url", target: "_blank", rel: "noopener noreferrer nofollow" });
    link.textContent = url;
    if (/^https?:\/\//i.test(url)) link.href = url;
    form.append(h("p", { class: "elicit-url-note", text: t("elicit_url_note") }), link);
  } else {
    const schema = record.requested_schema || {};
    const properties = schema.properties || {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    for (const [name, prop] of Object.entries(properties)) {
      const isRequired = required.has(name);
      const field = fieldControl(name, prop, isRequired);
      const label = h(
        field.group ? "span" : "label",
        { class: "elicit-label", for: field.group ? null : field.id },
        h("span", { text: prop.title || name }),
        isRequired ? h("span", { class: "elicit-required", text: " *", title: t("elicit_required") }) : null,
      );
      const hint = prop.description ? h("small", { class: "muted elicit-help", text: prop.description }) : null;
      form.append(
        h(
          "div",
          { class: `elicit-field${field.inline ? " elicit-inline" : ""}`, dataset: { field: name } },
          field.inline ? [field.control, label] : [label, field.control],
          hint,
        ),
      );
      fields.push({ name, read: field.read });
    }
  }
  card.append(form);
  const expires = record.expires_at
    ? h("p", { class: "muted elicit-expires", text: t("elicit_expires", { when: formatWhen(record.expires_at) }) })
    : null;
  if (!editable) {
    card.append(expires, h("p", { class: "approval-readonly", text: t("elicit_read_only") }));
    form.querySelectorAll("input, select").forEach((control) => {
      /** @type {HTMLInputElement} */ (control).disabled = true;
    });
    return card;
  }
  const error = h("p", { class: "form-error elicit-error", role: "alert", hidden: true });
  const answer = async (action) => {
    const body = { action };
    if (action === "accept" && record.mode !== "url") {
      if (!form.reportValidity()) return;
      const content = {};
      for (const field of fields) {
        const value = field.read();
        if (value !== undefined) content[field.name] = value;
      }
      body.content = content;
    }
    const controls = card.querySelectorAll("button, input, select");
    controls.forEach((control) => {
      /** @type {HTMLInputElement} */ (control).disabled = true;
    });
    error.hidden = true;
    const ok = onAnswer ? await onAnswer(record.id, body) : false;
    if (ok !== true) {
      controls.forEach((control) => {
        /** @type {HTMLInputElement} */ (control).disabled = false;
      });
      if (typeof ok === "string") {
        error.textContent = ok;
        error.hidden = false;
      }
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    answer("accept");
  });
  const button = (action, label, primary = false) =>
    h("button", {
      type: "button",
      class: `btn btn-small${primary ? " btn-primary" : ""}`,
      dataset: { action: `elicit-${action}` },
      text: label,
      onclick: () => answer(action),
    });
  card.append(
    error,
    expires,
    h(
      "div",
      { class: "form-buttons" },
      button("accept", record.mode === "url" ? t("elicit_opened") : t("elicit_accept"), true),
      button("decline", t("elicit_decline")),
      button("cancel", t("elicit_cancel")),
    ),
  );
  return card;
}
