package dev.tally.http.dto;

/**
 * A run's limits.
 *
 * @param maxAttempts attempts per case, timeouts included
 * @param timeoutRetries how many more times a case that ran past the case timeout is tried
 * @param caseTimeout the time budget of one attempt, in Tally's duration text ({@code 10m}, {@code 30s})
 * @param failFast how many first cases all erring alike pause the run (0: never); default 20
 */
public record SettingsObject(int maxAttempts, int timeoutRetries, String caseTimeout, Integer failFast) {}
