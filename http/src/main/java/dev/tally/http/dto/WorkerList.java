package dev.tally.http.dto;

import java.util.List;

/**
 * The workers of this store, by name.
 *
 * @param workers one entry per worker process
 */
public record WorkerList(List<WorkerObject> workers) {}
