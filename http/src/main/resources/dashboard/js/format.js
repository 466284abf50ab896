// How the pages write numbers, times and durations, and the run figures derived from a run object.

const integer = new Intl.NumberFormat('en-US');

export function n(value) {
  return value == null ? '—' : integer.format(value);
}

export function escapeHtml(text) {
  return String(text ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

/** A duration in ms as Tally writes durations: 850ms, 12.3s, 4m 10s, 2h 5m. */
export function duration(ms) {
  if (ms == null || !isFinite(ms)) {
    return '—';
  }
  if (ms < 1000) {
    return `${Math.round(ms)}ms`;
  }
  const s = ms / 1000;
  if (s < 60) {
    return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  }
  const m = Math.floor(s / 60);
  if (m < 60) {
    return `${m}m ${Math.round(s % 60)}s`;
  }
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function time(iso) {
  if (!iso) {
    return '—';
  }
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function clock(iso) {
  return iso ? new Date(iso).toLocaleTimeString(undefined, { hour12: false }) : '—';
}

/** Cases that will not run again: recorded, failed out of attempts, or cancelled (the API's sum). */
export function ended(run) {
  return run.counters.ended;
}

/** Cases with a verdict: recorded, or out of attempts (the API's sum); what a rate of work is of. */
export function judged(run) {
  return run.counters.judged;
}

/**
 * Rate (cases a second) and ETA of a run: from recent samples of its ended count when there are two
 * spread over a second or more, else from its whole life so far.
 */
export function rateAndEta(run, samples) {
  const done = judged(run); // cancelled cases are no work done: a cancel must not look like a burst of speed
  const remaining = Math.max(0, run.total - ended(run));
  let rate = null;
  if (samples && samples.length >= 2) {
    const first = samples[0];
    const last = samples[samples.length - 1];
    if (last.at - first.at >= 1000) {
      rate = (last.ended - first.ended) / ((last.at - first.at) / 1000);
    }
  }
  if (rate == null && run.createdAt) {
    const end = run.finishedAt ? Date.parse(run.finishedAt) : Date.now();
    const seconds = (end - Date.parse(run.createdAt)) / 1000;
    rate = seconds > 0 ? done / seconds : null;
  }
  const eta = run.state === 'running' && rate > 0 ? (remaining / rate) * 1000 : null;
  return { rate, eta };
}

export function rateText(rate) {
  if (rate == null || !isFinite(rate)) {
    return '—';
  }
  return rate >= 10 ? `${integer.format(Math.round(rate))}/s` : `${rate.toFixed(1)}/s`;
}

/**
 * An estimate (the API's accuracy, mean score or pass@k) in words: its interval, method and n, exactly as the
 * command line writes it. The API writes the words (its estimates' text); the page only shows them.
 */
export function estimateWords(e) {
  return e ? e.text : '—';
}

/** An estimate's value alone (a percentage, or a mean to three places), for a figure's card: the API's brief. */
export function estimateBrief(e) {
  return e ? e.brief : '—';
}

/** A progress bar of passed, failed, errored and cancelled over the total. */
export function progressBar(run) {
  const c = run.counters;
  const total = Math.max(1, run.total);
  const parts = [['pass', c.passed], ['fail', c.failed], ['error', c.errored], ['cancel', c.cancelled]];
  let left = 0;
  const spans = parts.map(([cls, v]) => {
    const w = (100 * v) / total;
    const span = `<span class="${cls}" style="left:${left}%;width:${w}%"></span>`;
    left += w;
    return span;
  }).join('');
  const pct = Math.floor((100 * ended(run)) / total);
  return `<span class="bar" role="progressbar" aria-valuemin="0" aria-valuemax="${run.total}" aria-valuenow="${ended(run)}"`
    + ` aria-label="${ended(run)} of ${run.total} cases ended">${spans}</span><span class="pct">${pct}%</span>`;
}

/**
 * The later of two views of one run. Its counters only grow and it ends once, so the later view is the one
 * further on: answers that arrive out of order (a page's first read after the stream's newer event) never
 * take a run back.
 */
export function later(a, b) {
  if (!a) {
    return b;
  }
  if (!b) {
    return a;
  }
  const key = r => [r.state === 'running' ? 0 : 1, ended(r), r.counters.redeliveries, r.counters.duplicatesSuppressed,
    r.counters.staleResultsFenced];
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) {
      return kb[i] > ka[i] ? b : a;
    }
  }
  return b;
}
