package dev.tally.http.dto;

import java.util.List;

/**
 * The fleet's recent changes, oldest first.
 *
 * @param events the changes
 */
public record FleetEventList(List<FleetEvent> events) {}
