package dev.tally.http.dto;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * A change of the fleet, as the server saw it in its coordinator's worker reports.
 *
 * @param seq its number, increasing (ask {@code ?after=seq} for the changes after it)
 * @param at when it was seen, ISO-8601 UTC
 * @param kind {@code joined}, {@code left} (detail: why: closed, reaped after its detector convicted it,
 *     said goodbye...), {@code draining} (its suspicion reached the drain level, or it is shutting down),
 *     {@code accepting} (it takes new work again), {@code ejected} (detail: the outlier ejection's reason)
 * @param workerId the worker
 * @param name its name
 * @param detail why, or absent
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record FleetEvent(long seq, String at, String kind, String workerId, String name, String detail) {}
