// Workers: live, silent (suspected: at the drain level or above, so given no work) and left (with why);
// jobs in flight; each live worker's suspicion over the last minutes with its drain and conviction levels;
// the fleet's changes (joined, left, drained, reaped, ejected, readmitted) as they happen.
import { BASE, getJson, isMissingRoute } from '../api.js';
import { events } from '../events.js';
import { n, escapeHtml, clock } from '../format.js';
import { suspicionChart } from '../charts.js';

/** How far back the suspicion charts look, minutes. */
const MINUTES = 10;
/** Fleet changes listed at most: the newest are what a person watching wants. */
const MAX_CHANGES = 200;

/** "0.12 of 8.00" (suspicion of the conviction level) as numbers, or null. */
function parseSuspicion(text) {
  const m = /^\s*([0-9.]+)(?:\s+of\s+([0-9.]+))?/.exec(text || '');
  return m ? { value: Number(m[1]), of: m[2] != null ? Number(m[2]) : null } : null;
}

/** The later of two reports of one worker (out-of-order answers never take it back): left is final. */
function laterReport(a, b) {
  if (!a) {
    return b;
  }
  if (a.state !== 'live' && b.state === 'live') {
    return a;
  }
  return Date.parse(b.reportedAt) >= Date.parse(a.reportedAt) || (b.state !== 'live' && a.state === 'live') ? b : a;
}

/** The API's word for how the worker is (WorkerStatus.condition, the one rule tally status uses too). */
function condition(w) {
  return w.condition || w.state;
}

export function mount(main) {
  document.title = 'Workers · Tally';
  main.innerHTML = `
    <h1>Workers</h1>
    <div id="workers-msg" role="status" aria-live="polite"></div>
    <div class="grid" id="fleet"></div>
    <h2>Fleet</h2>
    <table id="workers">
      <thead><tr><th>Worker</th><th>Id</th><th>State</th><th>Why it left</th><th>Suspicion</th>
        <th class="num">Jobs in flight</th><th>Ejected until</th><th>Last ejection</th><th class="num">Times ejected</th><th>Reported</th></tr></thead>
      <tbody></tbody>
    </table>
    <div class="cols">
      <section><h2>Suspicion, last ${MINUTES} minutes</h2>
        <p class="muted" id="levels">Blue: the worker's suspicion; amber dashes: the drain level (no new work at or above it);
          red dashes: the conviction level (reaped at or above it). <span id="detector"></span></p>
        <div class="worker-charts" id="charts"></div></section>
      <section><h2>Fleet changes</h2><ol class="events" id="changes" aria-live="polite"></ol></section>
    </div>`;
  const $ = sel => main.querySelector(sel);
  const workers = new Map();
  const samples = new Map(); // worker id -> [{at, value}]
  const charts = new Map();
  let levels = { drain: null, conviction: null };
  let serverChanges = false;
  const changes = new Map(); // seq -> change: the server's list and its events merge, in whatever order they arrive
  let derivedSeq = 0; // numbers for the changes a server without the list leaves the page to derive

  function renderTable() {
    const list = [...workers.values()].sort((a, b) => (a.state === b.state ? a.name.localeCompare(b.name) : a.state === 'live' ? -1 : 1));
    $('#workers tbody').innerHTML = list.length === 0 ? '<tr><td colspan="10" class="muted">No worker has joined.</td></tr>'
      : list.map(w => {
        const cond = condition(w);
        return `<tr data-worker="${escapeHtml(w.id)}">
          <td>${escapeHtml(w.name)}</td><td class="mono">${escapeHtml(w.id)}</td>
          <td><span class="badge ${cond}" data-state>${cond}</span></td>
          <td>${escapeHtml(w.leftReason || '')}</td>
          <td class="mono">${escapeHtml(w.suspicion || '')}</td>
          <td class="num">${n(w.inFlight)}${w.slots != null ? ` / ${n(w.slots)}` : ''}</td>
          <td>${w.ejectedUntil ? clock(w.ejectedUntil) : ''}</td>
          <td>${escapeHtml(w.ejectionReason || '')}</td>
          <td class="num">${n(w.timesEjected)}</td>
          <td>${clock(w.reportedAt)}</td></tr>`;
      }).join('');
    const count = s => list.filter(w => condition(w) === s).length;
    $('#fleet').innerHTML = [['live', count('live')], ['drained', count('drained')], ['ejected', count('ejected')],
      ['silent', count('silent')], ['left', count('left')],
      ['jobs in flight', list.reduce((t, w) => t + (w.state === 'live' ? w.inFlight : 0), 0)]]
      .map(([k, v]) => `<div class="figure"><div class="n">${n(v)}</div><div class="k">${k}</div></div>`).join('');
  }

  function renderCharts() {
    const live = [...workers.values()].filter(w => w.state === 'live');
    for (const [wid, chart] of charts) {
      if (!live.some(w => w.id === wid)) {
        chart.destroy();
        charts.delete(wid);
        main.querySelector(`[data-chart="${CSS.escape(wid)}"]`)?.remove();
      }
    }
    for (const w of live) {
      if (!charts.has(w.id)) {
        const card = document.createElement('div');
        card.className = 'card';
        card.dataset.chart = w.id;
        card.innerHTML = `<h3>${escapeHtml(w.name)} <span class="muted mono">${escapeHtml(w.id)}</span></h3><div></div>`;
        $('#charts').append(card);
        charts.set(w.id, suspicionChart(card.lastElementChild, MINUTES));
      }
      const s = samples.get(w.id) || [];
      const parsed = parseSuspicion(w.suspicion);
      charts.get(w.id).update(s, levels.drain, levels.conviction ?? (parsed ? parsed.of : null));
    }
  }

  function renderChanges() {
    const newest = [...changes.values()].sort((a, b) => b.seq - a.seq).slice(0, MAX_CHANGES);
    $('#changes').innerHTML = newest.length === 0 ? '<li class="muted">No change yet.</li>'
      : newest.map(c => `<li><time datetime="${escapeHtml(c.at)}">${clock(c.at)}</time>
        <strong>${escapeHtml(c.name || c.id || c.worker || '')}</strong> <span class="badge ${escapeHtml(c.kind)}">${escapeHtml(c.kind)}</span>
        ${c.reason ? escapeHtml(c.reason) : ''}</li>`).join('');
  }

  function addChange(change) {
    changes.set(change.seq, change);
    if (changes.size > MAX_CHANGES) {
      changes.delete(Math.min(...changes.keys()));
    }
    renderChanges();
  }

  /** A change the page saw itself (a server without the list): numbered after every other. */
  function derive(change) {
    addChange({ ...change, seq: Number.MAX_SAFE_INTEGER / 2 + ++derivedSeq });
  }

  /** A worker event: the table, its suspicion sample, and (when the server keeps no list) the change it shows. */
  function onWorker(w) {
    const before = workers.get(w.id);
    w = laterReport(before, w);
    workers.set(w.id, w);
    const parsed = parseSuspicion(w.suspicion);
    const level = w.suspicionLevel ?? (parsed ? parsed.value : null);
    if (level != null && w.state === 'live') {
      const list = samples.get(w.id) || [];
      list.push({ at: Date.parse(w.reportedAt) || Date.now(), value: level });
      while (list.length > 0 && Date.now() - list[0].at > MINUTES * 60_000) {
        list.shift();
      }
      samples.set(w.id, list);
    }
    if (!serverChanges) {
      const at = w.reportedAt || new Date().toISOString();
      if (!before && w.state === 'live') {
        derive({ at, name: w.name, kind: 'joined' });
      } else if (before && before.state === 'live' && w.state !== 'live') {
        derive({ at, name: w.name, kind: 'left', reason: w.leftReason });
      } else if (before && before.acceptingWork && !w.acceptingWork && w.state === 'live') {
        derive({ at, name: w.name, kind: 'drained', reason: `suspicion ${w.suspicion || ''}` });
      } else if (before && w.timesEjected > before.timesEjected) {
        derive({ at, name: w.name, kind: 'ejected', reason: w.ejectionReason });
      } else if (before && !before.acceptingWork && w.acceptingWork && w.state === 'live') {
        derive({ at, name: w.name, kind: 'readmitted' });
      }
    }
    renderTable();
    renderCharts();
  }

  async function load() {
    try {
      const list = await getJson(`${BASE}/workers`);
      list.workers.forEach(w => workers.set(w.id, laterReport(workers.get(w.id), w)));
    } catch (e) {
      $('#workers-msg').innerHTML = `<p class="notice error">Cannot read the workers: ${escapeHtml(e.message)}</p>`;
      return;
    }
    try {
      const s = await getJson(`${BASE}/workers/suspicion?minutes=${MINUTES}`);
      levels = { drain: s.drainLevel ?? null, conviction: s.convictionLevel ?? null };
      const health = s.localHealth && s.localHealth.enabled && s.localHealth.multiplier > 1
        ? ` The coordinator is starved (its timers run late, or many workers are silent at once): a worker is
          reaped only after <span class="mono">${escapeHtml(s.localHealth.multiplier)}</span> times its usual silence.`
        : '';
      $('#detector').innerHTML = `Detector <span class="mono">${escapeHtml(s.detector)}</span>: drain at
        ${escapeHtml(s.drainLevel)}, conviction at ${escapeHtml(s.convictionLevel)}.${health}`;
      samples.clear();
      for (const w of s.workers) {
        samples.set(w.id, w.samples.map(x => ({ at: Date.parse(x.at), value: x.level })));
      }
    } catch (e) {
      if (!isMissingRoute(e)) {
        $('#workers-msg').innerHTML = `<p class="notice error">Cannot read the suspicion: ${escapeHtml(e.message)}</p>`;
      }
      for (const w of workers.values()) {
        const parsed = parseSuspicion(w.suspicion);
        if (parsed && !samples.has(w.id)) {
          samples.set(w.id, [{ at: Date.parse(w.reportedAt) || Date.now(), value: parsed.value }]);
        }
      }
    }
    try {
      const c = await getJson(`${BASE}/workers/events`);
      serverChanges = true;
      c.events.forEach(e => changes.set(e.seq, fleetChange(e)));
    } catch (e) {
      if (!isMissingRoute(e)) {
        $('#workers-msg').innerHTML = `<p class="notice error">Cannot read the fleet's changes: ${escapeHtml(e.message)}</p>`;
      }
      // A server without the list: what is known of those that left.
      if (changes.size === 0) {
        [...workers.values()].filter(w => w.state !== 'live').sort((a, b) => Date.parse(a.reportedAt) - Date.parse(b.reportedAt))
          .forEach(w => derive({ at: w.reportedAt, name: w.name, kind: 'left', reason: w.leftReason }));
      }
    }
    renderTable();
    renderCharts();
    renderChanges();
  }

  /** A change as GET /workers/events and the 'fleet' event give it. */
  function fleetChange(e) {
    return { seq: e.seq, at: e.at, kind: e.kind, name: e.name, id: e.workerId, reason: e.detail };
  }

  function onFleet(e) {
    serverChanges = true;
    addChange(fleetChange(e));
  }

  const off = [events.on('worker', onWorker), events.on('fleet', onFleet), events.on('open', load)];
  load();
  return () => {
    off.forEach(f => f());
    charts.forEach(c => c.destroy());
  };
}
