// The dashboard: one page, its routes in the URL's fragment (#/runs, #/runs/ID, #/workers, #/new). Each page
// module mounts into <main> and returns a function that unmounts it.
import { BASE, token, setToken, onUnauthorized, api, ApiError } from './api.js';
import { events } from './events.js';
import { record } from './samples.js';
import * as runsPage from './pages/runs.js';
import * as runPage from './pages/run.js';
import * as workersPage from './pages/workers.js';
import * as newRunPage from './pages/newrun.js';

const routes = [
  { pattern: /^#\/runs\/(\d+)$/, page: runPage, nav: 'runs' },
  { pattern: /^#\/runs$/, page: runsPage, nav: 'runs' },
  { pattern: /^#\/workers$/, page: workersPage, nav: 'workers' },
  { pattern: /^#\/new$/, page: newRunPage, nav: 'new' },
];

const main = document.getElementById('main');
const liveBadge = document.getElementById('live');
const signOut = document.getElementById('signout');
let unmount = null;

events.on('status', status => {
  liveBadge.textContent = { live: 'live', reconnecting: 'reconnecting…', offline: 'offline' }[status] || status;
  liveBadge.className = 'live' + (status === 'live' ? ' on' : status === 'reconnecting' ? ' retry' : '');
});
events.on('run', record);

function route() {
  if (token() === null) {
    return;
  }
  const hash = location.hash || '#/runs';
  const match = routes.map(r => ({ r, m: r.pattern.exec(hash) })).find(x => x.m);
  if (unmount) {
    unmount();
    unmount = null;
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (match && a.dataset.nav === match.r.nav) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
  if (!match) {
    main.innerHTML = '<h1>Not found</h1><p>No page here. <a href="#/runs">Runs</a></p>';
    return;
  }
  // Each page gets an element of its own: what an unmounted page's late answers write goes nowhere.
  const root = document.createElement('div');
  main.replaceChildren(root);
  unmount = match.r.page.mount(root, match.m.slice(1)) || null;
}

function showLogin(message) {
  events.stop();
  if (unmount) {
    unmount();
    unmount = null;
  }
  signOut.hidden = true;
  main.innerHTML = `
    <form class="card login" id="login">
      <h1>Sign in</h1>
      <p class="muted">This server needs its API token (the one in its <span class="mono">--api-token-file</span>
        or <span class="mono">TALLY_API_TOKEN</span>). It is kept in this tab only (sessionStorage) and sent in
        the Authorization header, never in a URL.</p>
      ${message ? `<p class="notice error" role="alert">${message}</p>` : ''}
      <label>API token <input id="token" type="password" autocomplete="current-password" required></label>
      <p><button class="primary" type="submit">Sign in</button></p>
    </form>`;
  const field = document.getElementById('token');
  field.focus();
  document.getElementById('login').addEventListener('submit', e => {
    e.preventDefault();
    setToken(field.value.trim());
    start();
  });
}

/** Checks the token (or that none is needed) and shows the page. */
async function start() {
  const typed = token();
  try {
    await api(BASE + '/runs?limit=1');
    if (typed === null) {
      setToken(''); // this server needs no token
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      setToken(null);
      showLogin(typed ? 'The server refused that token.' : '');
      return;
    }
    main.innerHTML = `<p class="notice error" role="alert">Cannot reach the API: ${e.message}. <button type="button" id="again">Try again</button></p>`;
    document.getElementById('again').addEventListener('click', start);
    return;
  }
  signOut.hidden = !token();
  events.start();
  route();
}

onUnauthorized(() => {
  setToken(null);
  showLogin('The server refused the token.');
});
signOut.addEventListener('click', () => {
  setToken(null);
  showLogin('');
});
window.addEventListener('hashchange', () => {
  route();
  // Keyboard and screen-reader users start reading the new page at its top, not at the link they left.
  main.focus({ preventScroll: true });
});
start();
