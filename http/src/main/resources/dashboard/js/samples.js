// Recent samples of each run's judged count (cases with a verdict), from its 'run' events: what the rate and the ETA are read from
// between the server's progress points.
import { judged } from './format.js';

/** How far back the rate looks, ms: long enough to smooth batches, short enough to follow a change. */
const WINDOW_MS = 60_000;
const byRun = new Map();

export function record(run) {
  const list = byRun.get(run.id) || [];
  const now = Date.now();
  list.push({ at: now, ended: judged(run) });
  while (list.length > 2 && now - list[0].at > WINDOW_MS) {
    list.shift();
  }
  byRun.set(run.id, list);
}

export function of(runId) {
  return byRun.get(runId) || [];
}
