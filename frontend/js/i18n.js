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

export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toLocaleString(pageLanguage(), {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}
