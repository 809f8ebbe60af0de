// Markdown for text the agent writes (answers, plan and subtask descriptions, outcomes):
// parsed by marked, then sanitised by DOMPurify before it touches the page. The agent's
// text comes from a model that reads web pages and tool output, so it is untrusted.
// HTML written in the source is shown as the characters it is, as chat apps do: a
// `<details>` or `<br>` a model writes reads as what it typed, and no tag of its choosing
// reaches the page. What survives is an allow-list of what markdown itself makes:
// paragraphs, headings, lists, code, quotes, emphasis, tables (with `align`), rules, line
// breaks, links (`href`, `title`) and task-list checkboxes (disabled). DOMPurify stays as
// the second gate: nothing can choose a class, id, style, name, data- or aria- attribute,
// which would let it borrow the app's own CSS (a fake toast or Approve button over the
// page) or take over ids the app's scripts look up. Images become links to them: a picture
// would load from wherever the text says (a tracker) and could show anything (a picture of
// a button). Links are judged by the origin the browser resolves them to, never by how
// they start: on-site links stay as written; others (http(s) and mailto only) open in a
// new tab with no opener, referrer or endorsement. People's own messages are never
// rendered as markdown.

import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.js";

/** @typedef {import("../vendor/marked.esm.js").ImageToken} ImageToken */
/** @typedef {import("../vendor/marked.esm.js").HtmlToken} HtmlToken */

const EXTERNAL_REL = "noopener noreferrer nofollow";
const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
const ALIGNMENTS = new Set(["left", "center", "right"]);

/** The attributes each tag may keep; every other attribute is removed. */
const ATTRIBUTES_BY_TAG = new Map([
  ["A", new Set(["href", "title"])],
  ["TH", new Set(["align"])],
  ["TD", new Set(["align"])],
  ["OL", new Set(["start"])],
  ["INPUT", new Set(["type", "checked", "disabled"])],
]);

/** @type {Record<string, (value: string) => boolean>} the few values markdown writes */
const VALID_VALUES = {
  align: (value) => ALIGNMENTS.has(value),
  start: (value) => /^\d{1,9}$/.test(value),
};

const SANITIZE = {
  ALLOWED_TAGS: [
    ...["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code"],
    ...["strong", "em", "del", "ul", "ol", "li", "a", "input"],
    ...["table", "thead", "tbody", "tr", "th", "td"],
  ],
  ALLOWED_ATTR: ["href", "title", "align", "start", "type", "checked", "disabled"],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  // No id or name survives, so nothing can clobber; this stays on in case that changes.
  SANITIZE_DOM: true,
  // A first gate only (http(s), mailto, or no scheme); placeLink decides on the resolved URL.
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  // The sanitised nodes themselves, not a string that would be parsed once more.
  RETURN_DOM_FRAGMENT: /** @type {true} */ (true),
};

const parser = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    /** @param {ImageToken} token */
    image({ href, title, text }) {
      const label = text || href;
      const titled = title ? ` title="${escapeHtml(title)}"` : "";
      return `<a href="${escapeHtml(href)}"${titled}>${escapeHtml(label)}</a>`;
    },
    /** @param {HtmlToken} token raw HTML in the source (a block, or one inline tag) */
    html({ text }) {
      return escapeHtml(text);
    },
  },
});

// An instance of our own: its hooks and settings touch no other use of DOMPurify.
const purify = DOMPurify(window);

purify.addHook("afterSanitizeAttributes", (node) => {
  const allowed = ATTRIBUTES_BY_TAG.get(node.tagName);
  for (const { name, value } of [...node.attributes]) {
    const valid = VALID_VALUES[name];
    if (!allowed || !allowed.has(name) || (valid && !valid(value))) node.removeAttribute(name);
  }
  if (node.tagName === "A") placeLink(node);
  else if (node.tagName === "INPUT") keepCheckboxOnly(node);
});

/**
 * An on-site link stays as written; any other allowed link points at its resolved URL and
 * opens in a new tab; a link to anything else loses its `href` (its text stays).
 * @param {Element} anchor
 */
function placeLink(anchor) {
  const href = anchor.getAttribute("href");
  if (href === null) return;
  let url;
  try {
    url = new URL(href, document.baseURI);
  } catch {
    anchor.removeAttribute("href");
    return;
  }
  if (!LINK_PROTOCOLS.has(url.protocol)) {
    anchor.removeAttribute("href");
    return;
  }
  if (url.protocol !== "mailto:" && url.origin === window.location.origin) return;
  // `https://this-site@elsewhere/` reads as this site: the credentials go, elsewhere shows.
  url.username = "";
  url.password = "";
  anchor.setAttribute("href", url.href);
  anchor.setAttribute("target", "_blank");
  anchor.setAttribute("rel", EXTERNAL_REL);
}

/**
 * Task lists' checkboxes are the only inputs markdown makes; they show, they never take input.
 * @param {Element} input
 */
function keepCheckboxOnly(input) {
  if ((input.getAttribute("type") || "").toLowerCase() !== "checkbox") {
    input.remove();
    return;
  }
  input.setAttribute("type", "checkbox");
  input.setAttribute("disabled", "");
}

/** @param {string} text */
function escapeHtml(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

/**
 * The sanitised nodes of `text` written in markdown.
 * @returns {DocumentFragment}
 */
export function markdownFragment(text) {
  return purify.sanitize(parser.parse(String(text ?? "")), SANITIZE);
}

/** Safe HTML for `text` written in markdown. */
export function markdownToHtml(text) {
  const holder = document.createElement("div");
  holder.append(markdownFragment(text));
  return holder.innerHTML;
}

/** A container (`<div class="md ...">`) holding `text` rendered as markdown. */
export function markdownElement(text, className = "") {
  const element = document.createElement("div");
  element.className = className ? `md ${className}` : "md";
  element.append(markdownFragment(text));
  return element;
}
