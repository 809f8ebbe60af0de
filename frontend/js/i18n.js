// Translated UI strings: the page embeds them (json_script "pb-strings") in the user's language.

let strings = {};

export function loadStrings(elementId = "pb-strings") {
  const element = document.getElementById(elementId);
  strings = element ? JSON.parse(element.textContent) : {};
}

/** The string for `key` with `{name}` placeholders filled in; the key itself if unknown. */
export function t(key, params = {}) {
  const template = Object.prototype.hasOwnProperty.call(strings, key) ? strings[key] : key;
  return template.replace(/\{(\w+)\}/g, (match, name) =>
    Object.prototype.hasOwnProperty.call(params, name) ? String(params[name]) : match,
  );
}

export function pageLanguage() {
  return document.documentElement.lang || "en";
}

/** A time as every page shows it (see `formatWhen`). */
export function formatTime(iso) {
  return formatWhen(iso);
}

/**
 * The one date-and-time format of every page: in the page's language, short; with
 * `absolute`, the full date and time with its time zone (shown on hover).
 * @param {string | null | undefined} iso
 */
export function formatWhen(iso, { absolute = false } = {}) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return absolute
    ? date.toLocaleString(pageLanguage(), { dateStyle: "full", timeStyle: "long" })
    : date.toLocaleString(pageLanguage(), { dateStyle: "medium", timeStyle: "short" });
}

/** Server-rendered `<time datetime>` elements take the same format, the full one on hover. */
export function localizeTimes(root = document) {
  for (const element of root.querySelectorAll("time[datetime]")) {
    const iso = element.getAttribute("datetime");
    const text = formatWhen(iso);
    if (!text) continue;
    element.textContent = text;
    element.setAttribute("title", formatWhen(iso, { absolute: true }));
  }
}
