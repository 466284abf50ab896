// GET /api/v1/events read with fetch() and a stream reader, so the bearer token goes in a header
// (EventSource cannot send one, and the token never goes in a URL). Reconnects with capped, jittered
// exponential backoff; after each (re)connection listeners of 'open' reload what they show, since events
// sent while disconnected are not replayed.
import { api, ApiError, BASE } from './api.js';

/** The first reconnection waits about this long, ms; each failure doubles it. */
const MIN_BACKOFF_MS = 500;
/** The longest wait between reconnections, ms: a server back after a restart is found within this. */
const MAX_BACKOFF_MS = 15_000;

class EventFeed {
  constructor() {
    this.listeners = new Map();
    this.controller = null;
    this.running = false;
    this.generation = 0; // a stop and a start leave one loop: the older one sees a newer generation and ends
    this.backoffMs = MIN_BACKOFF_MS;
  }

  /** Calls fn(data) for each event of this type ('run', 'worker', ... or 'open', 'status'); returns an unsubscribe. */
  on(type, fn) {
    if (!this.listeners.has(type)) {
      this.listeners.set(type, new Set());
    }
    this.listeners.get(type).add(fn);
    return () => this.listeners.get(type).delete(fn);
  }

  emit(type, data) {
    for (const fn of this.listeners.get(type) || []) {
      try {
        fn(data);
      } catch (e) {
        console.warn('event listener failed', e);
      }
    }
  }

  start() {
    if (!this.running) {
      this.running = true;
      this.loop(++this.generation);
    }
  }

  stop() {
    this.running = false;
    if (this.controller) {
      this.controller.abort();
    }
    this.emit('status', 'offline');
  }

  async loop(generation) {
    const current = () => this.running && this.generation === generation;
    while (current()) {
      this.controller = new AbortController();
      try {
        const response = await api(BASE + '/events', { headers: { Accept: 'text/event-stream' }, signal: this.controller.signal });
        this.backoffMs = MIN_BACKOFF_MS;
        this.emit('status', 'live');
        this.emit('open', null);
        await this.read(response.body);
      } catch (e) {
        if (!current() || e.name === 'AbortError') {
          return;
        }
        if (e instanceof ApiError && e.status === 401) {
          this.stop();
          return;
        }
      }
      if (!current()) {
        return;
      }
      this.emit('status', 'reconnecting');
      const wait = this.backoffMs * (0.5 + Math.random() / 2);
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
      await new Promise(resolve => setTimeout(resolve, wait));
    }
  }

  /** Reads the text/event-stream format (WHATWG HTML, "Server-sent events") until the stream ends. */
  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let event = '';
    let data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        return;
      }
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        let line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.endsWith('\r')) {
          line = line.slice(0, -1);
        }
        if (line === '') {
          if (data.length > 0) {
            this.dispatch(event || 'message', data.join('\n'));
          }
          event = '';
          data = [];
        } else if (line.startsWith(':')) {
          // a comment: the server's keep-alive
        } else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let text = colon < 0 ? '' : line.slice(colon + 1);
          if (text.startsWith(' ')) {
            text = text.slice(1);
          }
          if (field === 'event') {
            event = text;
          } else if (field === 'data') {
            data.push(text);
          }
        }
      }
    }
  }

  dispatch(type, text) {
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      console.warn(`event ${type}: not JSON`, text);
      return;
    }
    this.emit(type, value);
  }
}

/** The page's one event stream, shared by its pages. */
export const events = new EventFeed();
