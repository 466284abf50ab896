// One submission of the New-run form and its idempotency key (draft-ietf-httpapi-idempotency-key-header).
//
// The key is made once, when the form opens (or its first field is touched), and kept in sessionStorage
// with the form's fields, so that every retry of this submission sends it: a double click, a network error,
// a 409 (the first request still being processed) or a 5xx retried with backoff, and a reload of the page
// followed by Submit again. The server then makes exactly one run and answers each retry with it. The key
// is forgotten only once the user has seen the server's confirmation (201, replayed or not): a confirmation
// that arrives after the user left the form is kept with the key (confirmed), and the form says it when it
// opens again, so that Submit there answers with the same run instead of making a second one. A new form
// after that gets a new key. A key made on each click would defeat all of this.
import { authHeaders, ApiError, BASE, reportUnauthorized } from './api.js';

const ITEM = 'tally.submission';
/** Sends of one press of Submit before it gives up and says so (the key is kept for the next press). */
const MAX_SENDS = 8;
/** The first retry waits about this long, ms; each one doubles it, up to MAX_BACKOFF_MS. */
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;

/** A key: 128 random bits as a UUID (version 4). getRandomValues works in plain-HTTP pages too, unlike randomUUID. */
function newKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map(x => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function save(record) {
  sessionStorage.setItem(ITEM, JSON.stringify(record));
}

/** The submission this tab has not had confirmed yet, or null. */
export function current() {
  try {
    return JSON.parse(sessionStorage.getItem(ITEM));
  } catch (e) {
    return null;
  }
}

/** The current submission, or a new one with a new key when there is none. */
export function open() {
  const existing = current();
  if (existing) {
    return existing;
  }
  const record = { key: newKey(), madeAt: new Date().toISOString(), fields: null, file: null, sends: 0 };
  save(record);
  return record;
}

/** Remembers what the form holds, so a reloaded page shows the same submission. */
export function remember(fields, file) {
  const record = open();
  record.fields = fields;
  record.file = file ? { name: file.name, size: file.size, lastModified: file.lastModified } : record.file;
  save(record);
  return record;
}

/** Forgets submission `key` (and only it: a newer form's key is not touched). */
export function forget(key) {
  const record = current();
  if (record && record.key === key) {
    sessionStorage.removeItem(ITEM);
  }
}

/** Notes on submission `key` that the server confirmed it with `run` (kept until the user has seen it). */
function confirmed(key, run) {
  const record = current();
  if (record && record.key === key) {
    record.confirmed = { id: run.id };
    record.refused = null;
    save(record);
  }
}

/** Notes on submission `key` that the server refused its last send, and why (nothing was made; the key is kept). */
export function refused(key, why) {
  const record = current();
  if (record && record.key === key) {
    record.refused = why;
    save(record);
  }
}

/** Abandons the current submission and starts another with a new key (the user asked: e.g. after a 422). */
export function restart() {
  sessionStorage.removeItem(ITEM);
  return open();
}

/**
 * The run's fields as the first line of an application/x-ndjson body. Built in one fixed order from the
 * form's values, so the same form gives the same bytes and a retry is recognised as the same request.
 */
export function headerLine(fields) {
  const run = {};
  if (fields.name) {
    run.name = fields.name;
  }
  const evaluator = { kind: fields.kind };
  if (fields.kind === 'exec') {
    evaluator.cmd = fields.cmd;
  } else if (fields.kind === 'sleep' && fields.millis !== '' && fields.millis != null) {
    evaluator.millis = Number(fields.millis);
  }
  run.evaluator = evaluator;
  const settings = {};
  if (fields.maxAttempts !== '' && fields.maxAttempts != null) {
    settings.maxAttempts = Number(fields.maxAttempts);
  }
  if (fields.timeoutRetries !== '' && fields.timeoutRetries != null) {
    settings.timeoutRetries = Number(fields.timeoutRetries);
  }
  if (fields.caseTimeout) {
    settings.caseTimeout = fields.caseTimeout;
  }
  if (Object.keys(settings).length > 0) {
    run.settings = settings;
  }
  return JSON.stringify(run) + '\n';
}

/** The server refused this key for another request (422): the user must start a new submission. */
export class KeyReusedError extends Error {}

/** The server did not confirm within MAX_SENDS sends; the key is kept, and Submit again retries it. */
export class NotConfirmedError extends Error {}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/**
 * Sends the submission `record` with `fields` and the dataset `file` until the server confirms it.
 * The body is a Blob of the header line and the File, so the browser streams the file from disk.
 *
 * @param onStatus called with words about each send and wait
 * @returns {Promise<{run: object, replayed: boolean}>} the run the server made for this key; the submission
 *   is kept, marked confirmed, until its caller has shown the run and forgets it ({@link forget})
 * @throws KeyReusedError on 422; ApiError for a refusal of the request's content (400, 413, 415, 401: the
 *   key is kept, and a corrected form under it is accepted); NotConfirmedError after MAX_SENDS sends
 */
export async function send(record, fields, file, onStatus = () => {}) {
  const body = new Blob([headerLine(fields), file]);
  let backoff = MIN_BACKOFF_MS;
  for (let attempt = 1; attempt <= MAX_SENDS; attempt++) {
    const stored = current();
    if (stored && stored.key === record.key) {
      stored.sends = (stored.sends || 0) + 1;
      stored.refused = null;
      save(stored);
    }
    onStatus(attempt === 1 ? 'Sending…' : `Sending again with the same key (try ${attempt} of ${MAX_SENDS})…`);
    let response;
    try {
      response = await fetch(BASE + '/runs', {
        method: 'POST',
        headers: authHeaders({
          'Idempotency-Key': `"${record.key}"`,
          'Content-Type': 'application/x-ndjson',
          Accept: 'application/json',
        }),
        body,
        cache: 'no-store',
      });
    } catch (networkError) {
      onStatus(`The network failed (${networkError.message}); retrying with the same key…`);
      await sleep(backoff * (0.5 + Math.random() / 2));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      continue;
    }
    if (response.status === 201) {
      const run = await response.json();
      confirmed(record.key, run);
      return { run, replayed: response.headers.get('Idempotent-Replayed') === 'true' };
    }
    let problem = null;
    try {
      problem = await response.json();
    } catch (ignored) {
      // not JSON
    }
    if (response.status === 422) {
      throw new KeyReusedError(problem && problem.detail ? problem.detail : 'this key was used for another request');
    }
    if (response.status === 409 || response.status >= 500) {
      const retryAfter = Number(response.headers.get('Retry-After'));
      // Never sooner than the server asks, and later each time: a retry sends the whole file again.
      const wait = Math.max(retryAfter > 0 ? retryAfter * 1000 : 0, backoff * (0.5 + Math.random() / 2));
      onStatus(response.status === 409
        ? `The server is still processing this submission; asking again in ${Math.ceil(wait / 1000)} s with the same key…`
        : `The server failed (${response.status}); retrying in ${Math.ceil(wait / 1000)} s with the same key…`);
      await sleep(wait);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      continue;
    }
    if (response.status === 401) {
      reportUnauthorized(problem);
    }
    const error = new ApiError(response.status, problem, response.headers);
    refused(record.key, error.message);
    throw error;
  }
  throw new NotConfirmedError(`the server did not confirm the run after ${MAX_SENDS} sends; `
    + 'press Submit again: it sends the same key, so it cannot make a second run');
}
