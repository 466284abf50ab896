// Run: its settings and evaluator, live counters and a progress chart, its cases as a table paged and
// filtered on the server (fast at a million cases), each case's attempts and output tail, the summary
// figures, and results.jsonl.
import { BASE, getJson, api, download, isMissingRoute } from '../api.js';
import { events } from '../events.js';
import { n, escapeHtml, time, clock, duration, ended, rateAndEta, rateText, progressBar, later, estimateBrief, estimateWords } from '../format.js';
import { of as samplesOf } from '../samples.js';
import { progressChart } from '../charts.js';

/** A model evaluator's settings after its kind: the model at its endpoint, then what was set (never a key: the run has none). */
function modelLine(e) {
  if (e.kind !== 'model') return '';
  const set = [
    ['temperature', e.temperature], ['max completion tokens', e.maxCompletionTokens], ['max concurrency', e.maxConcurrency], ['requests per minute', e.requestsPerMinute], ['seed', e.seed],
    ['stop', e.stop && e.stop.map(s => JSON.stringify(s)).join(' ')], ['request timeout', e.requestTimeout],
    ['price', e.price && `$${e.price} per M tokens`], ['key from', e.apiKeyEnv && `$${e.apiKeyEnv}`],
  ].filter(([, v]) => v != null).map(([k, v]) => `${k} ${escapeHtml(String(v))}`);
  const prompt = e.prompt != null ? `<br>prompt <span class="mono">${escapeHtml(e.prompt)}</span>` : '';
  const system = e.system != null ? `<br>system <span class="mono">${escapeHtml(e.system)}</span>` : '';
  return ` <span class="mono">${escapeHtml(e.model)}</span> at <span class="mono">${escapeHtml(e.baseUrl)}</span>`
    + (set.length ? `<br>${set.join(', ')}` : '') + prompt + system;
}

/** Cases per page of the table: one screen's worth; the server pages, so the run's size does not matter. */
const CASES_PAGE = 50;
/**
 * While the run goes on, its first page of cases is read again on its events at most this often, ms: the
 * verdicts fill in as they come, without a read per event (4 a second) or a polling loop.
 */
const LIVE_CASES_MS = 2000;

export function mount(main, [idText]) {
  const id = Number(idText);
  main.innerHTML = `
    <h1 id="run-title">Run ${id}</h1>
    <div id="run-msg" role="status" aria-live="polite"></div>
    <div class="toolbar">
      <button type="button" id="results" disabled>Download results.jsonl</button>
      <button type="button" id="cancel" class="danger" hidden>Cancel run</button>
      <span id="progress-bar"></span>
    </div>
    <div class="grid" id="figures" aria-live="off"></div>
    <div class="cols">
      <section class="card"><h2>Settings</h2><dl class="kv" id="settings"></dl></section>
      <section class="card"><h2>Progress</h2><div id="chart"></div></section>
    </div>
    <section id="summary-section" hidden><h2>Summary</h2><div class="card"><dl class="kv" id="summary"></dl>
      <form class="filters" id="group-form"><label>Group by <input name="groupBy" placeholder="a case field, e.g. subject"></label>
        <button type="submit">Show</button></form>
      <table id="groups" hidden><thead><tr><th>group</th><th class="num">cases</th><th>accuracy</th><th>mean score</th></tr></thead><tbody></tbody></table>
    </div></section>
    <h2>Cases</h2>
    <form class="filters" id="filters">
      <label>Verdict <select name="verdict"><option value="">any</option><option>pass</option><option>fail</option><option>error</option><option>cancelled</option></select></label>
      <label>State <select name="state"><option value="">any</option><option>pending</option><option>leased</option><option>done</option><option>failed</option><option>cancelled</option></select></label>
      <label>Case id contains <input name="q" type="search" placeholder="text in the id"></label>
      <label><span>Attempts</span><select name="minAttempts"><option value="">any</option><option value="2">more than one</option></select></label>
      <button type="submit">Filter</button>
    </form>
    <table id="cases">
      <thead><tr><th class="num">#</th><th>Case</th><th>State</th><th>Verdict</th><th class="num">Score</th>
        <th class="num">Attempts</th><th>Worker</th><th class="num">Duration</th><th class="num">Queued</th></tr></thead>
      <tbody></tbody>
    </table>
    <div class="pager">
      <button type="button" id="first" disabled>First page</button>
      <button type="button" id="next" disabled>Next page</button>
      <span class="muted" id="page-note"></span>
    </div>`;
  const $ = sel => main.querySelector(sel);
  let run = null;
  let chart = null;
  let points = [];
  let serverProgress = false;
  let nextUrl = null;
  let pageNumber = 1;
  let marked = false;
  let pageCases = new Map();

  function figure(label, value, cls = '', title = '') {
    return `<div class="figure ${cls}" ${title ? `title="${escapeHtml(title)}"` : ''}><div class="n" data-figure="${escapeHtml(label)}">${value}</div><div class="k">${escapeHtml(label)}</div></div>`;
  }

  function renderRun() {
    const c = run.counters;
    document.title = `Run ${run.id}${run.name ? ` · ${run.name}` : ''} · Tally`;
    $('#run-title').innerHTML = `Run ${run.id}${run.name ? ` · ${escapeHtml(run.name)}` : ''} <span class="badge ${run.state}" id="run-state"`
      + `${run.pausedReason ? ` title="${escapeHtml(run.pausedReason)}"` : ''}>${run.state}</span>`
      + (run.pausedReason ? ` <span class="paused-reason" id="paused-reason">${escapeHtml(run.pausedReason)}</span>` : '');
    $('#progress-bar').innerHTML = progressBar(run);
    const { rate, eta } = rateAndEta(run, samplesOf(run.id));
    $('#figures').innerHTML = [
      figure('total', n(run.total)),
      figure('ended', n(ended(run))),
      figure('passed', n(c.passed)),
      figure('failed', n(c.failed)),
      figure('errored', n(c.errored)),
      ...(c.cancelled > 0 ? [figure('cancelled', n(c.cancelled), '', 'cases not run because the run was cancelled: ended, never judged')] : []),
      // Both figures are the API's (one owner of the statistics); the tooltips give their intervals.
      figure('accuracy', estimateBrief(run.accuracy), '',
        `passed / (passed + failed + errored)${run.accuracy ? `: ${estimateWords(run.accuracy)}` : ''}`),
      figure('mean score', estimateBrief(run.meanScore), '', run.meanScore ? estimateWords(run.meanScore) : 'no recorded score yet'),
      figure('rate', rateText(rate)),
      figure('ETA', run.state === 'running' ? duration(eta) : '—'),
      figure('redeliveries', n(c.redeliveries), 'guarantee', 'cases leased again after a worker was lost or a lease expired'),
      ...(c.backups > 0 ? [figure('backup attempts', n(c.backups), 'guarantee',
        'copies of straggling cases on other workers; the first to report is recorded, the other abandoned, never counted')] : []),
      figure('duplicates suppressed', n(c.duplicatesSuppressed), 'guarantee', 'results of an already recorded case, not counted twice'),
      figure('stale results fenced', n(c.staleResultsFenced), 'guarantee', 'results carrying an old fencing token, refused'),
      ...(run.usage ? [
        figure('tokens', n(run.usage.promptTokens + run.usage.completionTokens), '',
          `${n(run.usage.promptTokens)} prompt + ${n(run.usage.completionTokens)} completion, each paid response counted once`),
        figure('cost', run.usage.costUsd != null ? `$${run.usage.costUsd.toFixed(4)}` : '—', '',
          run.usage.costUsd != null ? 'at the run\'s price' : 'no price given'),
      ] : []),
    ].join('');
    const e = run.evaluator || {};
    const s = run.settings || {};
    $('#settings').innerHTML = `
      <dt>evaluator</dt><dd>${escapeHtml(e.kind)}${e.cmd ? ` <span class="mono">${escapeHtml(e.cmd)}</span>` : ''}${e.millis != null ? ` ${n(e.millis)} ms` : ''}${modelLine(e)}</dd>
      <dt>scorers</dt><dd class="mono">${run.scorers && run.scorers.length ? run.scorers.map(escapeHtml).join('<br>') : '—'}</dd>
      <dt>dataset</dt><dd>${escapeHtml(run.dataset || '—')}</dd>
      <dt>max attempts</dt><dd>${n(s.maxAttempts)}</dd>
      <dt>timeout retries</dt><dd>${n(s.timeoutRetries)}</dd>
      <dt>case timeout</dt><dd>${escapeHtml(s.caseTimeout || '—')}</dd>
      <dt>fail fast</dt><dd>${s.failFast ? `after ${n(s.failFast)} errors alike` : 'never'}</dd>
      <dt>created</dt><dd>${time(run.createdAt)}</dd>
      <dt>finished</dt><dd>${time(run.finishedAt)}</dd>`;
    const over = run.state === 'finished' || run.state === 'cancelled';
    $('#results').disabled = !over;
    $('#results').title = over ? '' : 'results.jsonl exists once the run finishes';
    $('#cancel').hidden = over;
  }

  async function renderSummary() {
    if (run.state !== 'finished' && run.state !== 'cancelled') {
      return; // a summary is a finished run's (a paused run has none yet)
    }
    try {
      const groupBy = main.querySelector('#group-form input[name=groupBy]').value.trim();
      const s = await getJson(`${BASE}/runs/${id}/summary${groupBy ? `?groupBy=${encodeURIComponent(groupBy)}` : ''}`);
      // The summary's own rows (RunReport.countRows): the same, in the same order and words, as tally run's table.
      const rows = s.rows.map(r => [r.label, r.count]);
      rows.push(['accuracy', estimateWords(s.accuracy)]);
      if (s.meanScore) {
        rows.push(['mean score', estimateWords(s.meanScore)]);
      }
      for (const v of (s.passAtK ? s.passAtK.values : [])) {
        rows.push([`pass@${v.k}`, estimateWords(v.estimate)]);
      }
      if (s.usage) {
        rows.push(['tokens', `${n(s.usage.promptTokens)} prompt + ${n(s.usage.completionTokens)} completion`]);
        if (s.usage.costUsd != null) {
          rows.push(['cost', `$${s.usage.costUsd.toFixed(4)}`]);
        }
      }
      rows.push(['run wall time', duration(s.runWallMillis)]);
      const groups = main.querySelector('#groups');
      groups.hidden = !s.groups;
      groups.querySelector('tbody').innerHTML = (s.groups ? s.groups.values : []).map(g => `<tr><td>${escapeHtml(g.value)}</td>`
        + `<td class="num">${n(g.n)}</td><td class="mono">${estimateWords(g.accuracy)}</td>`
        + `<td class="mono">${estimateWords(g.meanScore)}</td></tr>`).join('');
      $('#summary').innerHTML = rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd class="mono">${typeof v === 'number' ? n(v) : escapeHtml(v)}</dd>`).join('');
      $('#summary-section').hidden = false;
    } catch (e) {
      // summary not there yet: the next event brings it
    }
  }

  /** A chart point as the server's progress points count: cases with a verdict (errored includes out of attempts). */
  function pointFrom(r, at) {
    const c = r.counters;
    return { at, ended: c.judged, passed: c.passed, failed: c.failed, errored: c.errored };
  }

  async function loadProgress() {
    try {
      const p = await getJson(`${BASE}/runs/${id}/progress`);
      serverProgress = true;
      points = [{ at: Date.parse(run.createdAt), ended: 0, passed: 0, failed: 0, errored: 0 }]
        .concat(p.points.map(x => ({ at: Date.parse(x.at), ended: x.ended, passed: x.passed, failed: x.failed, errored: x.errored })));
    } catch (e) {
      if (!isMissingRoute(e)) {
        throw e;
      }
      // A server without the progress route: the chart starts at the run's creation and follows its events.
      points = [{ at: Date.parse(run.createdAt), ended: 0, passed: 0, failed: 0, errored: 0 }];
    }
    const last = run.finishedAt ? Date.parse(run.finishedAt) : Date.now();
    if (points.length === 0 || points[points.length - 1].at < last) {
      points.push(pointFrom(run, last));
    }
    chart.update(ordered(points));
  }

  /**
   * Points in time order, each count at least the one before: the server's points stand at the end of
   * their span (which may be a moment ahead of the events' points), and counts only grow.
   */
  function ordered(list) {
    const now = Date.now();
    const sorted = list.map(p => ({ ...p, at: Math.min(p.at, now) })).sort((a, b) => a.at - b.at);
    for (let i = 1; i < sorted.length; i++) {
      for (const k of ['ended', 'passed', 'failed', 'errored']) {
        sorted[i][k] = Math.max(sorted[i][k], sorted[i - 1][k]);
      }
    }
    return sorted;
  }

  function casesUrl() {
    const form = new FormData($('#filters'));
    const params = new URLSearchParams({ limit: String(CASES_PAGE) });
    for (const name of ['verdict', 'state', 'q', 'minAttempts']) {
      const v = (form.get(name) || '').trim();
      if (v) {
        params.set(name, v);
      }
    }
    return `${BASE}/runs/${id}/cases?${params}`;
  }

  let casesAsked = 0;

  async function loadCases(url) {
    const tbody = $('#cases tbody');
    const asked = ++casesAsked;
    try {
      const page = await getJson(url);
      if (asked !== casesAsked) {
        return; // a later question is on its way: its answer is the one to show
      }
      nextUrl = page.next;
      pageCases = new Map(page.cases.map(c => [c.id, c]));
      tbody.innerHTML = page.cases.length === 0
        ? '<tr><td colspan="9" class="muted">No cases match.</td></tr>'
        : page.cases.map(c => `
        <tr class="case-row" data-case="${escapeHtml(c.id)}">
          <td class="num">${c.position + 1}</td>
          <td><button type="button" class="link mono case-open" aria-expanded="false" style="color:inherit">${escapeHtml(c.id)}</button></td>
          <td>${c.state}</td>
          <td>${c.verdict ? `<span class="badge ${c.verdict}">${c.verdict}</span>` : ''}</td>
          <td class="num">${c.score == null ? '' : c.score}</td>
          <td class="num">${c.attempts}</td>
          <td class="mono">${escapeHtml(c.worker || '')}</td>
          <td class="num">${c.durationMillis == null ? '' : duration(c.durationMillis)}</td>
          <td class="num">${c.queuedMillis == null ? '' : duration(c.queuedMillis)}</td>
        </tr>`).join('');
      $('#next').disabled = !nextUrl;
      $('#first').disabled = pageNumber === 1;
      $('#page-note').textContent = `page ${pageNumber}`;
      if (!marked) {
        marked = true;
        // What the browser tests read: the time from navigation to the first page of cases on screen.
        performance.mark('tally:cases-rendered');
        $('#cases').dataset.renderedMs = String(Math.round(performance.now()));
      }
    } catch (e) {
      tbody.innerHTML = `<tr><td colspan="9"><p class="notice error">Cannot read the cases: ${escapeHtml(e.message)}</p></td></tr>`;
    }
  }

  async function toggleCase(tr) {
    const button = tr.querySelector('.case-open');
    const open = tr.nextElementSibling && tr.nextElementSibling.classList.contains('detail');
    if (open) {
      tr.nextElementSibling.remove();
      button.setAttribute('aria-expanded', 'false');
      return;
    }
    button.setAttribute('aria-expanded', 'true');
    const detail = document.createElement('tr');
    detail.className = 'detail';
    detail.innerHTML = '<td colspan="9" class="muted">Reading its attempts…</td>';
    tr.after(detail);
    const caseId = tr.dataset.case;
    try {
      const attempts = await getJson(`${BASE}/runs/${id}/cases/${encodeURIComponent(caseId)}/attempts`);
      const c = pageCases.get(caseId) || {};
      detail.innerHTML = `<td colspan="9">
        <strong>Attempts of ${escapeHtml(caseId)}</strong>
        <table class="attempts"><thead><tr><th>Worker</th><th class="num">Fencing token</th><th>Started</th>
          <th class="num">Duration</th><th>How it ended</th><th>Detail</th></tr></thead><tbody>
        ${attempts.attempts.length === 0 ? '<tr><td colspan="6" class="muted">No attempt has ended yet.</td></tr>'
          : attempts.attempts.map(a => `<tr>
            <td class="mono">${escapeHtml(a.worker || '')}</td><td class="num">${a.fencingToken}</td>
            <td>${clock(a.startedAt)}</td>
            <td class="num">${duration(a.runMillis != null ? a.runMillis : Date.parse(a.endedAt) - Date.parse(a.startedAt))}</td>
            <td><span class="badge ${escapeHtml((a.ending || '').replace(/[ _]/g, '-'))}">${escapeHtml((a.ending || '').replace(/_/g, ' '))}</span>${
              a.duplicateResults ? ` <span class="badge duplicate" title="its result arrived again after it was recorded: suppressed">duplicate ×${a.duplicateResults}</span>` : ''}${
              a.fencedResults ? ` <span class="badge fenced" title="its result arrived after its lease had ended: refused by its fencing token">fenced ×${a.fencedResults}</span>` : ''}</td>
            <td>${escapeHtml(a.detail || '')}</td></tr>`).join('')}
        </tbody></table>
        ${c.failureReason ? `<p class="notice error">${escapeHtml(c.failureReason)}</p>` : ''}
        ${c.answer != null ? `<strong>Answer</strong><pre class="output mono answer">${escapeHtml(c.answer)}</pre>` : ''}
        ${c.fields ? `<strong>Fields</strong><pre class="output mono fields">${escapeHtml(JSON.stringify(c.fields, null, 2))}</pre>` : ''}
        <strong>Output (stdout tail)</strong>${c.exitCode != null ? ` <span class="muted exit-code">exit code ${c.exitCode}</span>` : ''}
        <pre class="output mono stdout">${escapeHtml(c.output || '(none)')}</pre>
        ${c.stderr ? `<strong>Stderr (tail)</strong><pre class="output mono stderr">${escapeHtml(c.stderr)}</pre>` : ''}
      </td>`;
    } catch (e) {
      detail.innerHTML = `<td colspan="9"><p class="notice error">Cannot read the attempts: ${escapeHtml(e.message)}</p></td>`;
    }
  }

  $('#cases tbody').addEventListener('click', e => {
    const tr = e.target.closest('tr.case-row');
    if (tr) {
      toggleCase(tr);
    }
  });
  $('#filters').addEventListener('submit', e => {
    e.preventDefault();
    pageNumber = 1;
    loadCases(casesUrl());
  });
  $('#group-form').addEventListener('submit', e => {
    e.preventDefault();
    renderSummary(); // the API states the figures by group: the page computes none of its own
  });
  $('#filters').addEventListener('change', e => {
    if (e.target.tagName === 'SELECT') { // a choice applies at once; typed text on Enter or Filter
      pageNumber = 1;
      loadCases(casesUrl());
    }
  });
  $('#next').addEventListener('click', () => {
    if (nextUrl) {
      pageNumber++;
      loadCases(nextUrl);
    }
  });
  $('#first').addEventListener('click', () => {
    pageNumber = 1;
    loadCases(casesUrl());
  });
  $('#results').addEventListener('click', () => download(`${BASE}/runs/${id}/results`, `run-${id}-results.jsonl`)
    .catch(e => { $('#run-msg').innerHTML = `<p class="notice error">${escapeHtml(e.message)}</p>`; }));
  $('#cancel').addEventListener('click', async () => {
    if (!confirm(`Cancel run ${id}? Its cases not yet recorded will not run.`)) {
      return;
    }
    try {
      run = await (await api(`${BASE}/runs/${id}/cancel`, { method: 'POST' })).json();
      renderRun();
    } catch (e) {
      $('#run-msg').innerHTML = `<p class="notice error" role="alert">Not cancelled: ${escapeHtml(e.message)}</p>`;
    }
  });

  let casesReadAt = 0;

  function onRun(r) {
    if (r.id !== id) {
      return;
    }
    const wasRunning = run && run.state === 'running';
    run = later(run, r);
    renderRun();
    // The first page follows the run, unless the reader has a case open or has moved on.
    if (run.state === 'running' && pageNumber === 1 && !main.querySelector('#cases tr.detail')
        && Date.now() - casesReadAt >= LIVE_CASES_MS) {
      casesReadAt = Date.now();
      loadCases(casesUrl());
    }
    if (chart) {
      points.push(pointFrom(r, Date.now()));
      chart.update(ordered(points));
    }
    if (wasRunning && r.state !== 'running') {
      renderSummary();
      if (pageNumber === 1) {
        loadCases(casesUrl()); // the first page's verdicts are final now
      }
    }
  }

  async function load() {
    try {
      run = later(run, await getJson(`${BASE}/runs/${id}`));
    } catch (e) {
      $('#run-msg').innerHTML = `<p class="notice error" role="alert">${escapeHtml(e.message)}</p>`;
      return;
    }
    renderRun();
    renderSummary();
    if (!chart) {
      chart = progressChart($('#chart'), run.total);
    }
    await loadProgress();
  }

  // The cases' first page does not wait for the run or its chart.
  loadCases(casesUrl());
  load();
  const off = [events.on('run', onRun), events.on('open', () => { if (run) { load(); } })];
  return () => {
    off.forEach(f => f());
    if (chart) {
      chart.destroy();
    }
  };
}
