// The inbox's live feed, on every signed-in page: the header's count, and the inbox page's
// list (the same socket also carries the person's template schedules' changes, relayed as the
// "pb-schedule" event). The socket only says "your inbox changed"; each change (and each reconnect, which
// heals anything missed meanwhile) refetches GET /api/inbox/ and hands the answer to every
// listener of the "pb-inbox" event.

import { api } from "./api.js";
import { LiveSocket } from "./live.js";

const URL = "/api/inbox/?snoozed=true";

let fetching = false;
let again = false;
// Set once the person presses "Sign out": the page is leaving, so it stops asking (a fetch
// sent after the session ended would only earn a 401).
let signingOut = false;

/** Refetch the inbox now (coalesced: at most one request in flight, one queued). */
export async function refreshInbox() {
  if (signingOut) return;
  if (fetching) {
    again = true;
    return;
  }
  fetching = true;
  try {
    const data = await api("GET", URL);
    document.dispatchEvent(new CustomEvent("pb-inbox", { detail: data }));
  } catch {
    // Offline or signed out: the next change or reconnect tries again.
  } finally {
    fetching = false;
    if (again) {
      again = false;
      refreshInbox();
    }
  }
}

/** @param {HTMLElement} link the header's inbox link, holding a `.inbox-count` badge */
export function startInboxFeed(link) {
  /** @type {HTMLElement | null} */
  const badge = link.querySelector(".inbox-count");
  document.addEventListener("pb-inbox", (event) => {
    const data = /** @type {CustomEvent} */ (event).detail;
    const count = Number(data.count) || 0;
    link.dataset.count = String(count);
    if (!badge) return;
    badge.textContent = String(count);
    badge.hidden = count === 0;
  });
  const socket = new LiveSocket("/ws/inbox/", {
    onMessage: (message) => {
      if (message.type === "hello" || message.type === "inbox.changed") refreshInbox();
      // A template schedule of this person changed: the template page's dialog follows it.
      else if (message.type === "schedule.changed") {
        document.dispatchEvent(new CustomEvent("pb-schedule", { detail: message }));
      }
    },
    onStatus: () => {},
  });
  socket.start();
  document.querySelector(".logout-form")?.addEventListener("submit", () => {
    signingOut = true;
    socket.suspend();
  });
}
