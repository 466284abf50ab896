package dev.tally.http.dto;

import java.util.List;

/**
 * A page of runs, newest first.
 *
 * @param runs the page
 * @param next the URL of the next page (older runs), or null if this is the last
 */
public record RunList(List<RunObject> runs, String next) {}
