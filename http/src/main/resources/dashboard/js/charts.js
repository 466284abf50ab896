// The dashboard's charts, drawn by uPlot (a WebJar in the jar): Tally's part is only which series.
import uPlot from 'uplot';

const COLORS = { ended: '#2457c5', passed: '#1f8a4c', failed: '#c0392b', errored: '#b7791f' };

function width(container, fallback) {
  return Math.max(240, Math.floor(container.clientWidth || fallback));
}

/**
 * The run's cumulative ended cases over time. `points` are {at: ms, ended, passed, failed, errored}.
 * Returns {update(points)}.
 */
export function progressChart(container, total) {
  const opts = {
    width: width(container, 520),
    height: 220,
    scales: {
      // One point alone gets a minute around it, not a scale of years.
      x: { time: true, range: (u, min, max) => (max - min < 1 ? [min - 30, min + 30] : [min, max]) },
      y: { range: (u, min, max) => [0, Math.max(total, max, 1)] },
    },
    axes: [{}, { size: 60 }],
    series: [
      {},
      { label: 'ended', stroke: COLORS.ended, width: 2 },
      { label: 'passed', stroke: COLORS.passed },
      { label: 'failed', stroke: COLORS.failed },
      { label: 'errored', stroke: COLORS.errored },
    ],
  };
  const plot = new uPlot(opts, [[], [], [], [], []], container);
  const observer = new ResizeObserver(() => plot.setSize({ width: width(container, 520), height: 220 }));
  observer.observe(container);
  return {
    update(points) {
      plot.setData([
        points.map(p => p.at / 1000),
        points.map(p => p.ended),
        points.map(p => p.passed),
        points.map(p => p.failed),
        points.map(p => p.errored),
      ]);
    },
    destroy() {
      observer.disconnect();
      plot.destroy();
    },
  };
}

/**
 * A live worker's suspicion over time, with its drain and conviction levels drawn as lines.
 * `samples` are {at: ms, value}. Returns {update(samples, drainLevel, convictionLevel)}.
 */
export function suspicionChart(container, minutes) {
  const opts = {
    width: 320,
    height: 120,
    legend: { show: false }, // the card says what the lines are
    scales: {
      // The last `minutes`, or less for a worker met since: from a little before its first sample to now.
      x: { time: true, range: (u, min) => [Math.max(Date.now() / 1000 - minutes * 60, min - 10), Date.now() / 1000] },
      y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] },
    },
    axes: [{ size: 30 }, { size: 40 }],
    series: [
      {},
      { label: 'suspicion', stroke: '#2457c5', width: 2 },
      { label: 'drain', stroke: '#b7791f', dash: [6, 4] },
      { label: 'conviction', stroke: '#c0392b', dash: [6, 4] },
    ],
  };
  const plot = new uPlot(opts, [[], [], [], []], container);
  return {
    update(samples, drainLevel, convictionLevel) {
      // A suspicion holds until the next report: drawn on to now.
      const held = samples.length ? samples.concat([{ at: Date.now(), value: samples[samples.length - 1].value }]) : samples;
      plot.setData([
        held.map(s => s.at / 1000),
        held.map(s => s.value),
        held.map(() => drainLevel ?? null),
        held.map(() => convictionLevel ?? null),
      ]);
    },
    destroy() {
      plot.destroy();
    },
  };
}
