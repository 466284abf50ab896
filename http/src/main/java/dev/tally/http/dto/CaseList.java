package dev.tally.http.dto;

import java.util.List;

/**
 * A page of a run's cases, in dataset order.
 *
 * @param cases the page
 * @param next the URL of the next page, or null if this is the last
 */
public record CaseList(List<CaseObject> cases, String next) {}
