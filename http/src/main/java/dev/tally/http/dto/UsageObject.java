package dev.tally.http.dto;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * What a run's paid calls used: the tokens its journalled responses report (each response counted once,
 * however many attempts read it) and, with a price, their cost.
 *
 * @param promptTokens tokens of the requests
 * @param completionTokens tokens of the answers
 * @param costUsd their cost at the run's price, in USD; absent without a price
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record UsageObject(long promptTokens, long completionTokens, Double costUsd) {}
