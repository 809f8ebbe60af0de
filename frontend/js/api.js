// JSON calls to /api/ with the session cookie and Django's CSRF header.

export class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.error || body.detail)) || `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.body = body || {};
    this.code = this.body.code || (status === 0 ? "network" : "http_" + status);
  }
}

function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "csrftoken") return decodeURIComponent(rest.join("="));
  }
  // Fallback: the token rendered into the page (e.g. by the logout form).
  /** @type {HTMLInputElement | null} */
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

/**
 * @param {string} method
 * @param {string} url
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<any>} the parsed JSON answer (null when empty)
 */
export async function api(method, url, body, { keepalive = false } = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  /** @type {RequestInit} */
  const options = { method, credentials: "same-origin", headers, keepalive };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
  let response;
  try {
    response = await fetch(url, options);
  } catch (error) {
    throw new ApiError(0, { error: String(error instanceof Error ? error.message : error) });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text.slice(0, 300) };
    }
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** A REST list answer may be paginated ({results: [...]}) or a bare array. */
export function listOf(data) {
  if (Array.isArray(data)) return data;
  return (data && Array.isArray(data.results) && data.results) || [];
}

/** Every message of a session older than `beforeId`, oldest first (REST pages of 1000). */
export async function messagesBefore(sessionId, beforeId) {
  const found = [];
  let after = 0;
  for (;;) {
    const page = await api("GET", `/api/sessions/${sessionId}/messages/?after=${after}&limit=1000`);
    for (const message of page.results) {
      if (message.id >= beforeId) return found;
      found.push(message);
    }
    if (!page.has_more || page.results.length === 0) return found;
    after = page.results[page.results.length - 1].id;
  }
}

/**
 * A plan's whole history, oldest first (REST pages of 1000).
 * @param {number} planId
 * @returns {Promise<import("./types.js").PlanEvent[]>}
 */
export async function allPlanEvents(planId) {
  const found = [];
  let since = 0;
  for (;;) {
    const page = await api("GET", `/api/plans/${planId}/events/?since=${since}&limit=1000`);
    found.push(...page.results);
    if (!page.has_more || page.results.length === 0) return found;
    since = page.results[page.results.length - 1].version;
  }
}
