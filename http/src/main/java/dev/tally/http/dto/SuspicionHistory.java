package dev.tally.http.dto;

import java.util.List;

/**
 * Each live worker's failure-detector suspicion over the last minutes, with the levels that matter: at
 * the drain level a worker is given no new work, at the conviction level it is reaped.
 *
 * @param detector the detector's kind: {@code fixed}, {@code missed} or {@code phi}
 * @param drainLevel the suspicion at which a worker stops getting new work
 * @param convictionLevel the suspicion at which a worker is reaped
 * @param workers the charted workers; their suspicion is as judged, already stretched by the local
 *     health multiplier and each worker's lag allowance
 * @param localHealth the coordinator's own health now
 */
public record SuspicionHistory(String detector, double drainLevel, double convictionLevel, List<Worker> workers,
    LocalHealth localHealth) {
  /**
   * The coordinator's own health as failure detection uses it now (Lifeguard's local health multiplier).
   *
   * @param enabled whether local health is on
   * @param multiplier how many times its usual silence a worker's detector waits now: 1 when healthy, up to
   *     9 with the defaults when the coordinator's timers run late or many workers fall silent at once
   * @param lateTicks the coordinator's timer ticks that ran late since it started
   * @param correlatedTicks the ticks that found many workers silent at once since it started
   */
  public record LocalHealth(boolean enabled, double multiplier, long lateTicks, long correlatedTicks) {}

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
