package dev.tally.core.store;

/**
 * What a run's paid calls used: the tokens its journalled responses report, each response counted once
 * however many attempts read it ({@link RunCounters#promptTokens}, {@link RunCounters#completionTokens}),
 * and their cost at the run's price.
 *
 * @param promptTokens tokens of the requests, {@code >= 0}
 * @param completionTokens tokens of the answers, {@code >= 0}
 * @param costUsd their cost in USD at the run's {@link dev.tally.core.Price}, or null when the run has none
 */
public record RunUsage(long promptTokens, long completionTokens, Double costUsd) {}
