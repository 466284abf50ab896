package dev.tally.http.dto;

import java.util.List;

/**
 * The body of {@code POST /api/v1/runs/{id}/rescore}.
 *
 * @param scorers the scorer specs to judge the run's stored answers with, in order (the first decides the
 *     verdict and score), as a run's {@code scorers}; a schema is given inline ({@code json:schema=...}), since
 *     the server reads no file of the client's
 */
public record RescoreRequest(List<String> scorers) {}
