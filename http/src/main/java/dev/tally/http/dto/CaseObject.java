package dev.tally.http.dto;

/**
 * One case of a run.
 *
 * @param id the case's id
 * @param position its 0-based place in the dataset
 * @param state {@code pending}, {@code leased}, {@code done}, {@code failed} (out of attempts) or {@code
 *     cancelled}
 * @param verdict {@code pass}, {@code fail} or {@code error} once it has ended (a case out of attempts is
 *     {@code error}), {@code cancelled} for a cancelled case, as in results.jsonl; null before
 * @param score the recorded score, or null
 * @param attempts how many leases it has been given
 * @param worker the worker that holds it or whose outcome was recorded; null if none
 * @param durationMillis how long the recorded evaluation ran, or null
 * @param queuedMillis how long its last attempt waited on its worker before it started, or null if unknown
 * @param output the last 4,096 characters of its stdout (or its evaluator's message for an error it made),
 *     or null before it is recorded
 * @param failureReason why it ended failed, or null
 * @param answer what its scorers judge, when its evaluator named it (an exec verdict line's {@code answer}),
 *     or null
 * @param fields its evaluator's other structured fields (an exec verdict line's), as a JSON object, or null
 * @param exitCode the exit code of its process (exec), or null
 * @param stderr the last 4,096 characters of its stderr, or null before it is recorded
 */
public record CaseObject(
    String id,
    int position,
    String state,
    String verdict,
    Double score,
    int attempts,
    String worker,
    Long durationMillis,
    Long queuedMillis,
    String output,
    String failureReason,
    String answer,
    com.fasterxml.jackson.databind.JsonNode fields,
    Integer exitCode,
    String stderr) {}
