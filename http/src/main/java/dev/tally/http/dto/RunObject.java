package dev.tally.http.dto;

import dev.tally.core.stats.EstimateText;

/**
 * A run, as {@code GET /api/v1/runs/{id}} and every answer about a run show it.
 *
 * @param id the run's id
 * @param name the name it was submitted with (empty if none)
 * @param state {@code running}, {@code paused} (a cap of its own is reached: it leases no more until the cap
 *     is raised, see {@code pausedReason}), {@code finished} or {@code cancelled}
 * @param createdAt when it was created, ISO-8601 UTC
 * @param finishedAt when its last case ended, ISO-8601 UTC; null while running
 * @param dataset where its cases came from (a path for {@code tally run}; the submission for the API)
 * @param evaluator how its cases are evaluated
 * @param scorers its scorer specs, in order (the first decides the verdict); empty when the evaluator's
 *     verdict stands
 * @param settings its attempt limits and case timeout
 * @param total how many cases it has
 * @param counters what happened to them so far
 * @param accuracy passed over judged cases (recorded, or out of attempts) so far, with its 95% Wilson
 *     interval and its {@code text} as the command line writes it; null while no case is judged
 * @param meanScore the mean of the recorded scores so far, with its 95% Student's t interval and its {@code
 *     text}; null while no recorded outcome carries a score
 * @param usage what its paid calls used (model runs); null for other evaluators
 * @param pausedReason why it is paused (which cap, and the spend); null unless paused
 */
public record RunObject(
    long id,
    String name,
    String state,
    String createdAt,
    String finishedAt,
    String dataset,
    EvaluatorObject evaluator,
    java.util.List<String> scorers,
    SettingsObject settings,
    long total,
    CountersObject counters,
    EstimateText.Written accuracy,
    EstimateText.Written meanScore,
    UsageObject usage,
    String pausedReason) {}
