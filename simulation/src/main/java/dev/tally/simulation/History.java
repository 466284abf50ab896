package dev.tally.simulation;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.Store;
import java.util.List;
import java.util.Map;

/**
 * One simulated history, as the {@link Checker} needs it and a report shows it.
 *
 * @param seed the seed that made it
 * @param planted the fault planted, or null
 * @param runIds the runs it ran, in creation order (some seeds submit more than one, some cancel one)
 * @param casesByRun how many cases each run had
 * @param store the durable store at the end, opened again (what survived every coordinator restart)
 * @param log what the workers did, by their own account
 * @param finished whether the coordinator reported the run finished
 * @param endReason why the history ended
 * @param endedAtMillis virtual time at the end, ms since the start
 * @param healthyWorkerRemained whether a healthy worker was alive at the end
 * @param reportedCounters the counters the coordinator reported as each run ended (a run cancelled in the
 *     store while no coordinator served it has none)
 * @param contractViolations breaches of the {@code WorkerEvents} contract the connection cores reported to
 *     the scheduler (a session's events after its loss, two live sessions of one worker...), as the
 *     {@code WorkerEventsChecker} worded them
 * @param fairShareViolations runs starved of leases while others got them, as {@link FairShareWatch} worded it
 * @param securityViolations breaches of the worker port's security: an impostor (a wrong worker token, or
 *     none) that was welcomed
 * @param epochs the leader epochs taken, and every coordinator's write committed or refused, in the store's
 *     commit order ({@link EpochLedger})
 * @param faults faults injected, by kind
 * @param events events the simulation scheduled
 * @param traceHash SHA-256 of the trace, hex
 * @param trace the trace's text, or null if it was not kept
 */
public record History(
    long seed,
    PlantedFault planted,
    List<Long> runIds,
    Map<Long, Integer> casesByRun,
    Store store,
    WorkerLog log,
    boolean finished,
    String endReason,
    long endedAtMillis,
    boolean healthyWorkerRemained,
    Map<Long, RunCounters> reportedCounters,
    List<String> contractViolations,
    List<String> fairShareViolations,
    List<String> securityViolations,
    List<EpochLedger.Entry> epochs,
    Map<FaultKind, Integer> faults,
    long events,
    String traceHash,
    String trace) {

  /** Cases in all its runs. */
  public int cases() {
    return casesByRun.values().stream().mapToInt(Integer::intValue).sum();
  }
}
