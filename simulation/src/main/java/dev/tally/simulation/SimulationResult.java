package dev.tally.simulation;

import java.util.List;
import java.util.Map;

/**
 * What one seed's history came to.
 *
 * @param seed the seed
 * @param planted the planted fault, or null
 * @param passed whether the checker found no violation
 * @param violations the checker's findings, one sentence each
 * @param traceHash SHA-256 of the history's trace, hex: equal for equal seeds
 * @param trace the trace's text, or null if it was not kept
 * @param cases cases in the run
 * @param faults faults injected, by kind
 * @param redeliveries attempts that ended retryably and put their job back (the store's counter)
 * @param duplicates resent results the store recognised and did not count again
 * @param fenced results from stale tokens the store refused
 * @param virtualMillis how long the history lasted in virtual time
 * @param endReason why it ended
 * @param abandoned attempts ended because another attempt of their case (a backup, or the attempt a backup
 *     copied) was recorded first
 * @param bothFinished those of them whose worker finished the case and sent its outcome too (fenced)
 * @param takeovers leader epochs taken after the first (a standby, or a restarted coordinator, took the lead)
 * @param staleWritesRefused write transactions the store refused because their leader epoch was stale
 */
public record SimulationResult(
    long seed,
    PlantedFault planted,
    boolean passed,
    List<String> violations,
    String traceHash,
    String trace,
    int cases,
    Map<FaultKind, Integer> faults,
    long redeliveries,
    long duplicates,
    long fenced,
    long virtualMillis,
    String endReason,
    long abandoned,
    long bothFinished,
    long takeovers,
    long staleWritesRefused) {

  /** The command that replays this history with its whole trace. */
  public String replayCommand() {
    return "tally simulate --seed " + seed + (planted == null ? "" : " --plant " + planted.cliName());
  }
}
