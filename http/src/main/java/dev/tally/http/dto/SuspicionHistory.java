package dev.tally.http.dto;

import java.util.List;

/**
 * Each live worker's failure-detector suspicion over the last minutes, with the levels that matter: at
 * the drain level a worker is given no new work, at the conviction level it is reaped.
 *
 * @param detector the detector's kind: {@code fixed}, {@code missed} or {@code phi}
 * @param drainLevel the suspicion at which a worker stops getting new work
 * @param convictionLevel the suspicion at which a worker is reaped
 * @param workers the charted workers
 */
public record SuspicionHistory(String detector, double drainLevel, double convictionLevel, List<Worker> workers) {
  /**
   * One worker's chart.
   *
   * @param id the worker's id
   * @param name its name
   * @param samples its suspicion over time, oldest first
   */
  public record Worker(String id, String name, List<Sample> samples) {}

  /**
   * One point.
   *
   * @param at when the coordinator reported it, ISO-8601 UTC
   * @param level the suspicion, on the detector's scale
   */
  public record Sample(String at, double level) {}
}
