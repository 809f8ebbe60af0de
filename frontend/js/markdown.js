// Markdown for text the agent writes (answers, plan and subtask descriptions, outcomes):
// parsed by marked, then sanitised by DOMPurify before it touches the page. The agent's
// text comes from a model that reads web pages and tool output, so it is untrusted: no
// script, no event handlers, no styles, no forms, no images (they would load from
// anywhere), and only http(s)/mailto links; links open in a new tab without an opener.
// People's own messages are never rendered as markdown.

import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.js";

const parser = new Marked({ gfm: true, breaks: true, async: false });

const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "svg", "math"],
  FORBID_ATTR: ["style", "srcset"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/(?!\/))/i,
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Safe HTML for `text` written in markdown. */
export function markdownToHtml(text) {
  return DOMPurify.sanitize(parser.parse(String(text ?? "")), SANITIZE);
}

/** A container (`<div class="md ...">`) holding `text` rendered as markdown. */
export function markdownElement(text, className = "") {
  const element = document.createElement("div");
  element.className = className ? `md ${className}` : "md";
  element.innerHTML = markdownToHtml(text);
  return element;
}
