// Presence on the session page: who else has it open (small avatars in the session bar) and
// who is editing which card (their initials on the card, and a warning in this page's edit
// form when someone else edits the same card). The server keeps the list with a time-out
// (planboard/realtime/presence.py); this page joins over the session socket once its snapshot
// arrives, sends a heartbeat, and says which card's edit form is open here.
//
// Cards are found by their `data-subtask-id`; the board re-renders cards as it likes, so the
// initials are put back whenever the board changes (a MutationObserver), and only changed
// when who is there changed: nothing is rebuilt, nothing blinks. Names are set as text.

import { h } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").Person} Person */

// Avatars shown in the bar before "+N".
const MAX_AVATARS = 4;
const HUES = 6;

/** "Ana Lima" → "AL", "bob.smith" → "BS", "alice" → "A", "" → "?". */
export function initials(name) {
  const words = String(name || "")
    .trim()
    .split(/[\s._@-]+/)
    .filter(Boolean);
  if (!words.length) return "?";
  const first = Array.from(words[0])[0];
  const last = words.length > 1 ? Array.from(words[words.length - 1])[0] : "";
  return (first + last).toUpperCase();
}

/** A person's label: "Ana Lima (ana)", or the username alone when it is their name. */
function label(person) {
  return person.name === person.username ? person.name : `${person.name} (${person.username})`;
}

function avatar(person, extraClass = "") {
  const el = h("span", { class: `presence-avatar ${extraClass}`.trim() });
  fillAvatar(el, person);
  return el;
}

function fillAvatar(el, person) {
  el.textContent = initials(person.name);
  el.title = label(person);
  el.setAttribute("aria-label", label(person));
  el.setAttribute("role", "img");
  for (let hue = 0; hue < HUES; hue += 1) {
    el.classList.toggle(`presence-hue-${hue}`, hue === Math.abs(person.user_id) % HUES);
  }
}

export class PresenceView {
  /**
   * @param {object} options
   * @param {number} options.me this page's user id (their own entries are not shown)
   * @param {HTMLElement} options.bar where the avatars go (in the session bar)
   * @param {HTMLElement} options.board the board, whose cards carry `data-subtask-id`
   * @param {(message: object) => boolean} options.send sends on the session socket
   */
  constructor({ me, bar, board, send }) {
    this.me = me;
    this.bar = bar;
    this.board = board;
    this.send = send;
    /** @type {Map<string, Person>} entry key -> person */
    this.people = new Map();
    this.joined = false;
    /** @type {number | null} the card whose edit form is open here, as last announced */
    this.announced = null;
    this.heartbeat = null;
    this.avatars = new Map(); // user id -> element in the bar
    this.more = h("span", { class: "presence-avatar presence-more" });
    this.bar.setAttribute("role", "group");
    this.bar.setAttribute("aria-label", t("presence_here"));
    this.observer = new MutationObserver(() => this.sync());
    this.observer.observe(board, { childList: true, subtree: true });
    window.addEventListener("pagehide", () => this.send({ type: "presence.leave" }));
    this.renderBar();
  }

  /** The session snapshot arrived (first connect, or a reconnect): join. */
  connected() {
    this.joined = true;
    this.announced = null;
    this.send({ type: "presence.join" });
    this.sync();
  }

  /** The socket dropped: nobody is known to be here until the next join answers. */
  disconnected() {
    this.joined = false;
    clearInterval(this.heartbeat);
    this.heartbeat = null;
    if (this.people.size) {
      this.people.clear();
      this.render();
    }
  }

  /**
   * A presence message from the socket; false when the message is something else.
   * @param {{type: string, people?: Person[], person?: Person, key?: string,
   *   heartbeat_seconds?: number}} message
   */
  onMessage(message) {
    if (message.type === "presence") {
      this.people = new Map((message.people || []).map((person) => [person.key, person]));
      if (!this.heartbeat && message.heartbeat_seconds) {
        const every = Math.max(1, message.heartbeat_seconds) * 1000;
        this.heartbeat = setInterval(() => this.send({ type: "presence.heartbeat" }), every);
      }
    } else if (message.type === "presence.update" && message.person) {
      this.people.set(message.person.key, message.person);
    } else if (message.type === "presence.left" && message.key) {
      this.people.delete(message.key);
    } else {
      return false;
    }
    this.render();
    return true;
  }

  /** The others here, once each (a person may have several tabs open), in order of arrival. */
  others() {
    /** @type {Map<number, Person>} */
    const byUser = new Map();
    for (const person of this.people.values()) {
      if (person.user_id === this.me) continue;
      const seen = byUser.get(person.user_id);
      // Prefer the tab where they edit something.
      if (!seen || (seen.editing === null && person.editing !== null)) {
        byUser.set(person.user_id, person);
      }
    }
    return [...byUser.values()];
  }

  render() {
    this.renderBar();
    this.sync();
  }

  renderBar() {
    const others = this.others();
    const shown = others.slice(0, others.length > MAX_AVATARS ? MAX_AVATARS - 1 : MAX_AVATARS);
    const keep = new Set(shown.map((person) => person.user_id));
    for (const [userId, el] of this.avatars) {
      if (!keep.has(userId)) {
        el.remove();
        this.avatars.delete(userId);
      }
    }
    let previous = null;
    for (const person of shown) {
      let el = this.avatars.get(person.user_id);
      if (!el) {
        el = avatar(person);
        this.avatars.set(person.user_id, el);
      }
      if (el.title !== label(person)) fillAvatar(el, person);
      const at = previous ? previous.nextSibling : this.bar.firstChild;
      if (at !== el) this.bar.insertBefore(el, at);
      previous = el;
    }
    const hiddenCount = others.length - shown.length;
    if (hiddenCount > 0) {
      this.more.textContent = `+${hiddenCount}`;
      const names = others.slice(shown.length).map(label).join(", ");
      this.more.title = names;
      this.more.setAttribute("aria-label", t("presence_more", { count: hiddenCount, names }));
      this.bar.append(this.more);
    } else {
      this.more.remove();
    }
    this.bar.hidden = others.length === 0;
  }

  /** Cards being edited by others show who; this page's own open edit form is announced. */
  sync() {
    this.observer.takeRecords();
    const editors = new Map(); // subtask id -> people
    for (const person of this.others()) {
      if (person.editing === null || person.editing === undefined) continue;
      if (!editors.has(person.editing)) editors.set(person.editing, []);
      editors.get(person.editing).push(person);
    }
    /** @type {NodeListOf<HTMLElement>} */
    const cards = this.board.querySelectorAll("[data-subtask-id]");
    /** @type {number | null} */
    let mine = null;
    for (const card of cards) {
      const id = Number(card.dataset.subtaskId);
      const form = card.querySelector("form");
      if (form && (mine === null || form.contains(document.activeElement))) mine = id;
      this.markCard(card, form, editors.get(id) || []);
    }
    if (this.joined && mine !== this.announced) {
      if (this.send({ type: "presence.editing", subtask_id: mine })) this.announced = mine;
    }
    // What this did to the board is not a change to react to.
    this.observer.takeRecords();
  }

  /**
   * @param {HTMLElement} card
   * @param {HTMLFormElement | null} form this page's edit form, when open on the card
   * @param {Person[]} people the others editing it
   */
  markCard(card, form, people) {
    const sig = people.map((person) => `${person.user_id}:${label(person)}`).join("|");
    const names = people.map((person) => person.name).join(", ");
    card.classList.toggle("has-editors", people.length > 0);
    /** @type {HTMLElement | null} */
    let badge = card.querySelector(":scope > .presence-editors");
    if (!people.length) {
      if (badge) badge.remove();
    } else if (!badge || badge.dataset.sig !== sig) {
      const fresh = h(
        "span",
        {
          class: "presence-editors",
          dataset: { sig },
          title: t("presence_editing_card", { names }),
        },
        people.map((person) => {
          const el = avatar(person, "presence-avatar-small");
          el.setAttribute("aria-hidden", "true");
          return el;
        }),
        h("span", { class: "visually-hidden", text: t("presence_editing_card", { names }) }),
      );
      if (badge) badge.replaceWith(fresh);
      else card.append(fresh);
    }
    /** @type {HTMLElement | null} */
    let warning = form ? form.querySelector(".presence-warning") : null;
    if (!form || !people.length) {
      if (warning) warning.remove();
    } else if (!warning || warning.dataset.sig !== sig) {
      const fresh = h("p", {
        class: "presence-warning",
        role: "status",
        dataset: { sig },
        text: t("presence_editing_warning", { names }),
      });
      if (warning) warning.replaceWith(fresh);
      else form.prepend(fresh);
    }
  }
}
