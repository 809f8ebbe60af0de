// The message box's extras (issue 24): the prompts of the session's toolsets (a menu; a
// prompt's arguments are asked, its text is got from the server and put in the box for the
// person to edit and send) and resources to attach to the next message. Names, descriptions
// and prompt text come from MCP servers: they are only ever set as text.

import { api, listOf } from "./api.js";
import { dialogButtons } from "./dialog.js";
import { h, icon } from "./dom.js";
import { t } from "./i18n.js";
import { toast } from "./toast.js";

/**
 * @typedef {{toolset_id: number, toolset: string, name: string, title: string,
 *   description: string, arguments: {name: string, description: string, required: boolean}[]}}
 *   Prompt
 * @typedef {{toolset_id: number, toolset: string, uri: string, name: string, title: string,
 *   description: string}} Resource
 * @typedef {{element: HTMLElement, attached: () => {toolset_id: number, uri: string}[],
 *   clear: () => void, refresh: () => Promise<void>}} ComposerExtras
 */

/**
 * @param {number} sessionId
 * @param {HTMLTextAreaElement} input the message box
 * @returns {ComposerExtras}
 */
export function composerExtras(sessionId, input) {
  /** @type {Prompt[]} */
  let prompts = [];
  /** @type {Resource[]} */
  let resources = [];
  /** @type {Resource[]} */
  let attached = [];

  const promptButton = menuButton("prompts", icon("sparkle"), t("prompts"));
  const attachButton = menuButton("attach", icon("paperclip"), t("attach_resource"));
  const promptMenu = h("ul", { class: "composer-menu", role: "menu", hidden: true });
  const attachMenu = h("ul", { class: "composer-menu", role: "menu", hidden: true });
  const chips = h("ul", { class: "composer-attachments", "aria-label": t("attached") });
  const element = h(
    "div",
    { class: "composer-extras", hidden: true },
    h("div", { class: "composer-menu-anchor" }, promptButton, promptMenu),
    h("div", { class: "composer-menu-anchor" }, attachButton, attachMenu),
    chips,
  );

  const closeMenus = () => {
    for (const [button, menu] of [
      [promptButton, promptMenu],
      [attachButton, attachMenu],
    ]) {
      menu.hidden = true;
      button.setAttribute("aria-expanded", "false");
    }
  };
  document.addEventListener("click", (event) => {
    if (!element.contains(/** @type {Node} */ (event.target))) closeMenus();
  });
  element.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeMenus();
  });

  const toggle = (/** @type {HTMLElement} */ button, /** @type {HTMLElement} */ menu) => {
    const opening = menu.hidden;
    closeMenus();
    menu.hidden = !opening;
    button.setAttribute("aria-expanded", String(opening));
    if (opening) /** @type {HTMLElement | null} */ (menu.querySelector("button"))?.focus();
  };

  promptButton.addEventListener("click", () => {
    promptMenu.replaceChildren(
      ...(prompts.length
        ? prompts.map((prompt) =>
            menuItem(prompt.title || prompt.name, prompt.toolset, prompt.description, () => {
              closeMenus();
              usePrompt(sessionId, prompt, input);
            }),
          )
        : [h("li", { class: "composer-menu-empty", text: t("prompts_none") })]),
    );
    toggle(promptButton, promptMenu);
  });
  attachButton.addEventListener("click", () => {
    attachMenu.replaceChildren(
      ...(resources.length
        ? resources.map((resource) =>
            menuItem(resource.title || resource.name, resource.toolset, resource.uri, () => {
              closeMenus();
              if (!attached.some((r) => same(r, resource))) attached.push(resource);
              showChips();
              input.focus();
            }),
          )
        : [h("li", { class: "composer-menu-empty", text: t("resources_none") })]),
    );
    toggle(attachButton, attachMenu);
  });

  const showChips = () => {
    chips.replaceChildren(
      ...attached.map((resource) => {
        const remove = h(
          "button",
          {
            type: "button",
            class: "chip-remove",
            "aria-label": t("attachment_remove", { name: resource.title || resource.name }),
          },
          icon("close"),
        );
        remove.addEventListener("click", () => {
          attached = attached.filter((r) => !same(r, resource));
          showChips();
        });
        return h(
          "li",
          { class: "chip", title: resource.uri },
          icon("paperclip"),
          h("span", { text: `${resource.toolset}: ${resource.title || resource.name}` }),
          remove,
        );
      }),
    );
  };

  const refresh = async () => {
    try {
      const [p, r] = await Promise.all([
        api("GET", `/api/sessions/${sessionId}/prompts/`),
        api("GET", `/api/sessions/${sessionId}/resources/`),
      ]);
      prompts = listOf(p);
      resources = listOf(r);
    } catch {
      prompts = [];
      resources = [];
    }
    promptButton.hidden = prompts.length === 0;
    attachButton.hidden = resources.length === 0;
    attached = attached.filter((a) => resources.some((r) => same(r, a)));
    showChips();
    element.hidden = prompts.length === 0 && resources.length === 0;
  };

  return {
    element,
    attached: () => attached.map((r) => ({ toolset_id: r.toolset_id, uri: r.uri })),
    clear: () => {
      attached = [];
      showChips();
    },
    refresh,
  };
}

function same(/** @type {Resource} */ a, /** @type {Resource} */ b) {
  return a.toolset_id === b.toolset_id && a.uri === b.uri;
}

function menuButton(
  /** @type {string} */ action,
  /** @type {Element} */ glyph,
  /** @type {string} */ label,
) {
  return h(
    "button",
    {
      type: "button",
      class: "btn btn-ghost btn-small",
      dataset: { action },
      "aria-haspopup": "menu",
      "aria-expanded": "false",
    },
    glyph,
    h("span", { text: label }),
  );
}

function menuItem(
  /** @type {string} */ label,
  /** @type {string} */ toolset,
  /** @type {string} */ detail,
  /** @type {() => void} */ choose,
) {
  const button = h(
    "button",
    { type: "button", role: "menuitem", class: "composer-menu-item" },
    h("span", { class: "composer-menu-label", text: label }),
    h("span", { class: "composer-menu-toolset", text: toolset }),
    detail ? h("span", { class: "composer-menu-detail", text: detail }) : null,
  );
  button.addEventListener("click", choose);
  return h("li", { role: "none" }, button);
}

/** Ask the prompt's arguments (if any), get its text, put it in the box. */
async function usePrompt(
  /** @type {number} */ sessionId,
  /** @type {Prompt} */ prompt,
  /** @type {HTMLTextAreaElement} */ input,
) {
  /** @type {Record<string, string> | null} */
  let values = {};
  if (prompt.arguments.length) {
    values = await askArguments(prompt);
    if (values === null) return;
  }
  try {
    const body = await api("POST", `/api/sessions/${sessionId}/prompts/get/`, {
      toolset_id: prompt.toolset_id,
      name: prompt.name,
      arguments: values,
    });
    input.value = String(body.text ?? ""); // the server's text, as text
    input.dispatchEvent(new Event("input"));
    input.focus();
  } catch (error) {
    toast(
      t("prompt_failed", {
        name: prompt.title || prompt.name,
        reason: error instanceof Error ? error.message : String(error),
      }),
      { kind: "error" },
    );
  }
}

/** Resolves to the arguments entered, or null when cancelled. */
function askArguments(/** @type {Prompt} */ prompt) {
  return new Promise((resolve) => {
    const fields = prompt.arguments.map((argument) => {
      const field = h("input", {
        type: "text",
        name: argument.name,
        required: argument.required,
        maxlength: 2000,
        class: "dialog-input",
      });
      return {
        argument,
        field,
        row: h(
          "label",
          { class: "field" },
          h("span", {
            class: "field-label",
            text: argument.required ? `${argument.name} *` : argument.name,
          }),
          field,
          argument.description
            ? h("span", { class: "field-help", text: argument.description })
            : null,
        ),
      };
    });
    const title = prompt.title || prompt.name;
    const form = h(
      "form",
      { method: "dialog", class: "dialog-form prompt-arguments" },
      h("h2", { class: "dialog-title", text: title }),
      h("p", {
        class: "dialog-message",
        text: prompt.description || t("prompt_arguments_help", { toolset: prompt.toolset }),
      }),
      ...fields.map((f) => f.row),
      dialogButtons(t("prompt_use")),
    );
    const dialog = h("dialog", { class: "dialog", "aria-label": title }, form);
    dialog.addEventListener("close", () => {
      /** @type {Record<string, string> | null} */
      let values = null;
      if (dialog.returnValue === "ok") {
        values = {};
        for (const { argument, field } of fields) {
          const value = /** @type {HTMLInputElement} */ (field).value.trim();
          if (value) values[argument.name] = value;
        }
      }
      dialog.remove();
      resolve(values);
    });
    document.body.append(dialog);
    dialog.showModal();
    /** @type {HTMLElement | undefined} */ (fields[0]?.field)?.focus();
  });
}
