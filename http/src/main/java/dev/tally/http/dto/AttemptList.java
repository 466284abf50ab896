package dev.tally.http.dto;

import java.util.List;

/**
 * A case's ended attempts, oldest first.
 *
 * @param attempts the attempts
 */
public record AttemptList(List<AttemptObject> attempts) {}
