package dev.tally.http.dto;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * The body of {@code POST /api/v1/runs} as {@code application/json}: the run's fields and its cases inline.
 * As {@code application/x-ndjson}, the first line is this object without {@code cases} and every further
 * line is one case. (Documentation of the shape for the OpenAPI document; the server reads the body as a
 * stream, never into this record.)
 *
 * @param name a name for people, at most {@value dev.tally.core.store.NewRun#MAX_NAME_CHARS} characters; may be absent
 * @param evaluator how the cases are evaluated
 * @param scorers scorer specs that judge each case's answer against its target, in order (the first decides
 *     the verdict and score; each result is {@code fields.scores.NAME}), e.g. {@code ["exact:ignore-case",
 *     "numeric:rel=0.01"]}; absent for none. A schema is given inline ({@code json:schema=...}): the server
 *     reads no file
 * @param settings attempts, timeout retries and the case timeout; each absent one takes {@code tally run}'s default
 * @param cases the cases: JSON objects, each with a unique string {@code id} and any other fields
 */
public record RunSubmission(
    String name, EvaluatorObject evaluator, List<String> scorers, SettingsObject settings, List<JsonNode> cases) {}
