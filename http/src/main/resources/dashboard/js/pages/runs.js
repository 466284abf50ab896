// Runs: every run with its state, progress, verdicts, rate and ETA, and the guarantee's counters
// (redeliveries, duplicates suppressed, stale results fenced); live from the event stream.
import { BASE, getJson, api } from '../api.js';
import { events } from '../events.js';
import { n, escapeHtml, time, duration, progressBar, rateAndEta, rateText, later, estimateBrief, estimateWords } from '../format.js';
import { of as samplesOf } from '../samples.js';

/** Runs per page: a screen or two. */
const PAGE = 50;

export function mount(main) {
  document.title = 'Runs · Tally';
  main.innerHTML = `
    <h1>Runs</h1>
    <div id="runs-msg" role="status" aria-live="polite"></div>
    <table id="runs">
      <thead><tr>
        <th class="num">Run</th><th>Name</th><th>State</th><th>Progress</th>
        <th class="num">Passed</th><th class="num">Failed</th><th class="num">Errored</th>
        <th class="num" title="Passed over judged cases, with its 95% interval in the tooltip">Accuracy</th>
        <th class="num">Rate</th><th class="num">ETA</th>
        <th class="num" title="Cases leased again after a worker was lost or a lease expired">Redeliveries</th>
        <th class="num" title="Results of a case already recorded, dropped so nothing is counted twice">Duplicates suppressed</th>
        <th class="num" title="Results carrying an old fencing token, refused">Stale fenced</th>
        <th>Created</th><th><span class="muted">Actions</span></th>
      </tr></thead>
      <tbody></tbody>
    </table>
    <div class="pager"><button type="button" id="older" hidden>Older runs</button></div>`;
  const tbody = main.querySelector('#runs tbody');
  const message = main.querySelector('#runs-msg');
  const older = main.querySelector('#older');
  const runs = new Map();
  let next = null;

  function row(run) {
    const { rate, eta } = rateAndEta(run, samplesOf(run.id));
    const c = run.counters;
    return `<td class="num"><a href="#/runs/${run.id}">${run.id}</a></td>
      <td>${escapeHtml(run.name || run.dataset || '')}</td>
      <td><span class="badge ${run.state}">${run.state}</span></td>
      <td>${progressBar(run)}</td>
      <td class="num">${n(c.passed)}</td><td class="num">${n(c.failed)}</td><td class="num">${n(c.errored)}</td>
      <td class="num" title="${escapeHtml(run.accuracy ? estimateWords(run.accuracy) : '')}">${estimateBrief(run.accuracy)}</td>
      <td class="num">${rateText(rate)}</td><td class="num">${run.state === 'running' ? duration(eta) : '—'}</td>
      <td class="num">${n(c.redeliveries)}</td><td class="num">${n(c.duplicatesSuppressed)}</td>
      <td class="num">${n(c.staleResultsFenced)}</td>
      <td>${time(run.createdAt)}</td>
      <td>${run.state === 'running' || run.state === 'paused' ? `<button type="button" class="danger" data-cancel="${run.id}">Cancel</button>` : ''}</td>`;
  }

  function render() {
    const sorted = [...runs.values()].sort((a, b) => b.id - a.id);
    tbody.innerHTML = sorted.length === 0
      ? '<tr><td colspan="15" class="muted">No runs yet. <a href="#/new">Start one</a>.</td></tr>'
      : sorted.map(r => `<tr data-run="${r.id}">${row(r)}</tr>`).join('');
    older.hidden = !next;
  }

  function update(run) {
    const known = runs.has(run.id);
    const newest = Math.max(0, ...runs.keys());
    if (!known && run.id < newest && runs.size >= PAGE) {
      return; // an old run not on this page
    }
    run = later(runs.get(run.id), run);
    runs.set(run.id, run);
    const tr = tbody.querySelector(`tr[data-run="${run.id}"]`);
    if (tr) {
      tr.innerHTML = row(run);
    } else {
      render();
    }
  }

  async function load() {
    try {
      const page = await getJson(`${BASE}/runs?limit=${PAGE}`);
      const kept = new Map(runs);
      runs.clear();
      page.runs.forEach(r => runs.set(r.id, later(kept.get(r.id), r)));
      next = page.next;
      render();
    } catch (e) {
      message.innerHTML = `<p class="notice error">Cannot read the runs: ${escapeHtml(e.message)}</p>`;
    }
  }

  older.addEventListener('click', async () => {
    const page = await getJson(next);
    page.runs.forEach(r => runs.set(r.id, r));
    next = page.next;
    render();
  });

  tbody.addEventListener('click', async e => {
    const button = e.target.closest('[data-cancel]');
    if (!button) {
      return;
    }
    const id = button.dataset.cancel;
    const run = runs.get(Number(id));
    if (!confirm(`Cancel run ${id}${run && run.name ? ` (${run.name})` : ''}? Its cases not yet recorded will not run.`)) {
      return;
    }
    button.disabled = true;
    try {
      const response = await api(`${BASE}/runs/${id}/cancel`, { method: 'POST' });
      update(await response.json());
      message.innerHTML = `<p class="notice info">Run ${escapeHtml(id)} cancelled.</p>`;
    } catch (err) {
      button.disabled = false;
      message.innerHTML = `<p class="notice error" role="alert">Run ${escapeHtml(id)} was not cancelled: ${escapeHtml(err.message)}</p>`;
    }
  });

  const off = [events.on('run', update), events.on('open', load)];
  load();
  return () => off.forEach(f => f());
}
