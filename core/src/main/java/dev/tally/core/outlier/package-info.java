/**
 * Gray-failure detection (DESIGN.md section 4): ejecting workers that heartbeat perfectly but fail or
 * crawl through real traffic. The {@link dev.tally.core.outlier.OutlierDetector} watches how attempts end,
 * the {@link dev.tally.core.outlier.OutlierPolicy} holds its thresholds, and it reports
 * {@link dev.tally.core.outlier.OutlierEvent}s for the log and a
 * {@link dev.tally.core.outlier.WorkerHealth} per worker for {@code tally status}.
 *
 * <p>Everything here is pure logic: no I/O, no clock and no randomness of its own; the caller passes the
 * time into every method, so a simulation drives it under virtual time. Silence is not this package's
 * business: a worker that stops talking is the {@link dev.tally.core.detect} detectors' to convict.
 */
package dev.tally.core.outlier;
