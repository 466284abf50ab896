/**
 * Tally's HTTP API: a thin adapter over a running coordinator's store and scheduler. {@link
 * dev.tally.http.ApiServer} serves the routes under {@code /api/v1} (runs, cases, attempts, results,
 * summary, workers, events, the OpenAPI document) and {@code /metrics}; {@link dev.tally.http.TallyServer}
 * is a coordinator with its API, what {@code tally server} runs. Every error is an RFC 9457 problem.
 */
package dev.tally.http;
