package dev.tally.http.dto;

/**
 * A worker as its coordinator last reported it.
 *
 * @param id the worker's id (one per process)
 * @param name its name (a place, such as {@code local-2}, or what {@code --name} said)
 * @param state {@code live} or {@code left}: whether it was connected at its last report
 * @param condition how it is, in one word, as {@code tally status} says it ({@code WorkerStatus#condition} at
 *     the answer's time): {@code live}, {@code drained} (no new work: suspected), {@code ejected} (an outlier,
 *     until {@code ejectedUntil}), {@code silent} (its coordinator stopped reporting) or {@code left}
 * @param leftReason why it left, or null while live
 * @param suspicion its failure detector's suspicion in words (e.g. {@code 0.12 of 8.00}); null if it left
 * @param acceptingWork false while its suspicion is at the drain level or above
 * @param ejectedUntil when its outlier ejection ends, ISO-8601 UTC; null if not ejected
 * @param ejectionReason why it was last ejected, or null if never
 * @param timesEjected how many times it has been ejected
 * @param inFlight how many jobs it holds
 * @param reportedAt when this was observed, ISO-8601 UTC
 * @param suspicionLevel the same suspicion as a number on its detector's scale; null if unknown or it left
 * @param slots how many cases it runs at once; null if unknown
 */
public record WorkerObject(
    String id,
    String name,
    String state,
    String condition,
    String leftReason,
    String suspicion,
    boolean acceptingWork,
    String ejectedUntil,
    String ejectionReason,
    int timesEjected,
    int inFlight,
    String reportedAt,
    Double suspicionLevel,
    Integer slots) {}
