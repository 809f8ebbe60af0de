// A websocket that reconnects with backoff and reports whether live updates flow.
// The server sends a fresh snapshot on every connect, so a reconnect is also a resync; the
// socket is "live" from that snapshot on (not from the open, when the page may still be stale).

const MAX_DELAY_MS = 15000;
// Close codes the server uses for "not signed in / not allowed" and "not found".
const REFUSED = new Set([4403, 4404]);
// What a socket's server sends first on every connect: the state to show, or that it is there.
const GREETINGS = new Set(["snapshot", "hello"]);

export class LiveSocket {
  /**
   * @param {string} path e.g. "/ws/sessions/3/"
   * @param {{onMessage: (msg: import("./types.js").SocketMessage) => void,
   *   onStatus: (status: string) => void}} handlers
   * status is "connecting", "live", "reconnecting", "paused" or "refused".
   */
  constructor(path, { onMessage, onStatus }) {
    this.path = path;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.socket = null;
    this.attempts = 0;
    this.timer = null;
    this.suspended = false;
    window.addEventListener("online", () => this.reconnectNow());
    window.addEventListener("offline", () => this.setStatus("reconnecting"));
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && !this.isOpen()) this.reconnectNow();
    });
  }

  get url() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${window.location.host}${this.path}`;
  }

  start() {
    this.connect();
  }

  isOpen() {
    return Boolean(this.socket) && this.socket.readyState === WebSocket.OPEN;
  }

  setStatus(status) {
    this.status = status;
    this.onStatus(status);
  }

  connect() {
    if (this.suspended) return;
    clearTimeout(this.timer);
    this.setStatus(this.attempts === 0 ? "connecting" : "reconnecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      if (socket !== this.socket) return;
      this.attempts = 0;
    });
    socket.addEventListener("message", (event) => {
      if (socket !== this.socket) return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      this.onMessage(message);
      // Live once the page shows what the server has: its greeting (the snapshot) is applied.
      if (GREETINGS.has(message.type) && this.status !== "live") this.setStatus("live");
    });
    socket.addEventListener("close", (event) => {
      if (socket !== this.socket) return;
      this.socket = null;
      if (REFUSED.has(event.code)) {
        // Signed out, access withdrawn, or gone: retrying would not help.
        this.setStatus("refused");
        return;
      }
      if (this.suspended) {
        this.setStatus("paused");
        return;
      }
      this.attempts += 1;
      this.setStatus("reconnecting");
      // Exponential backoff with jitter, so that many browsers do not return at once.
      const delay = Math.min(MAX_DELAY_MS, 500 * 2 ** Math.min(this.attempts - 1, 5));
      this.timer = setTimeout(() => this.connect(), delay * (0.75 + Math.random() * 0.5));
    });
  }

  reconnectNow() {
    if (this.suspended || this.isOpen()) return;
    this.attempts = Math.max(this.attempts, 1);
    this.connect();
  }

  /** Ask the server for a fresh snapshot (after a version gap or a plan switch). */
  resync() {
    if (this.isOpen()) {
      this.socket.send(JSON.stringify({ type: "resync" }));
      return true;
    }
    return false;
  }

  /**
   * Send a small control message (presence); false when the socket is not open.
   * @param {object} message
   */
  send(message) {
    if (!this.isOpen()) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Stop live updates until resume(), e.g. to demonstrate or test a dropped connection. */
  suspend() {
    this.suspended = true;
    clearTimeout(this.timer);
    if (this.socket) this.socket.close();
    else this.setStatus("paused");
  }

  resume() {
    this.suspended = false;
    this.attempts = 1;
    this.connect();
  }
}
