// The dashboard's one way to the API: the bearer token from sessionStorage goes in the Authorization
// header of every request (never in a URL), and every refusal becomes an ApiError with its RFC 9457 problem.

export const BASE = '/api/v1';
const TOKEN_ITEM = 'tally.apiToken';

/** The token the user typed this session, '' for a server without one, or null before signing in. */
export function token() {
  return sessionStorage.getItem(TOKEN_ITEM);
}

export function setToken(value) {
  if (value == null) {
    sessionStorage.removeItem(TOKEN_ITEM);
  } else {
    sessionStorage.setItem(TOKEN_ITEM, value);
  }
}

/** An API refusal: its HTTP status, its problem (or null) and its headers. */
export class ApiError extends Error {
  constructor(status, problem, headers) {
    super(problemText(status, problem));
    this.status = status;
    this.problem = problem;
    this.headers = headers;
  }
}

/** A problem in words, with the place at fault when it names one. */
export function problemText(status, problem) {
  if (!problem) {
    return `HTTP ${status}`;
  }
  const text = problem.detail || problem.title || 'HTTP ' + status;
  // A detail that names its line already ("request body line 4: ...") is not told it again.
  const place = problem.field ? ` (field ${problem.field})`
    : problem.line ? (text.includes(`line ${problem.line}`) ? '' : ` (line ${problem.line})`)
    : problem.parameter ? ` (parameter ${problem.parameter})` : problem.header ? ` (header ${problem.header})` : '';
  return `${text}${place}`;
}

const unauthorizedListeners = new Set();

/** Calls fn whenever the API answers 401 (the token is missing or wrong). */
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
}

/** Tells the page the token was refused (for callers that fetch() themselves). */
export function reportUnauthorized(problem) {
  unauthorizedListeners.forEach(fn => fn(problem));
}

/** Headers with the token, and whatever else is given. */
export function authHeaders(extra = {}) {
  const headers = new Headers(extra);
  const t = token();
  if (t) {
    headers.set('Authorization', 'Bearer ' + t);
  }
  return headers;
}

/**
 * fetch() of an API path with the token; resolves to the Response when it is 2xx.
 * @throws ApiError for any other status; TypeError (fetch's) when the network failed
 */
export async function api(path, { method = 'GET', body, headers = {}, signal } = {}) {
  const h = authHeaders(headers);
  if (!h.has('Accept')) {
    h.set('Accept', 'application/json');
  }
  const response = await fetch(path, { method, body, headers: h, signal, cache: 'no-store' });
  if (response.ok) {
    return response;
  }
  let problem = null;
  try {
    problem = await response.json();
  } catch (ignored) {
    // a body that is not JSON: the status says enough
  }
  if (response.status === 401) {
    reportUnauthorized(problem);
  }
  throw new ApiError(response.status, problem, response.headers);
}

export async function getJson(path, options) {
  return (await api(path, options)).json();
}

/** Whether the server knows the route (the pages use optional routes only when the server has them). */
export function isMissingRoute(error) {
  return error instanceof ApiError && (error.status === 404 || error.status === 405)
    && (!error.problem || !error.problem.parameter);
}

/** Saves an API response's body as a file: a download the token can authorize, unlike a link. */
export async function download(path, fileName) {
  const blob = await (await api(path, { headers: { Accept: '*/*' } })).blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
