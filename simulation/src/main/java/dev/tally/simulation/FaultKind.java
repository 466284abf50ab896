package dev.tally.simulation;

/**
 * The named sites at which a simulation injects faults, drawn per seed. Each names what a real fleet does
 * to Tally, not how the simulation fakes it (see {@link Simulation} for the mechanics).
 */
public enum FaultKind {
  /** A worker process dies: its connection closes, its running cases and its outbox vanish. */
  WORKER_CRASH("worker-crash"),
  /** A worker stops (SIGSTOP) with its connection open and silent, then resumes and sends late results. */
  WORKER_FREEZE("worker-freeze"),
  /**
   * A worker is told to stop (SIGTERM): it drains gracefully, handing back what it has not started and
   * finishing what runs within its drain timeout, then exits.
   */
  WORKER_DRAIN("worker-drain"),
  /** A worker's frames are held back, then arrive in a burst; or its heartbeats leave late all along. */
  HEARTBEAT_DELAY("heartbeat-delay"),
  /** A worker runs every case several times slower than its peers. */
  SLOW_WORKER("slow-worker"),
  /** A worker that heartbeats perfectly and fails every case in a few ms (gray failure). */
  FAILING_WORKER("failing-worker"),
  /** A case that kills whichever worker runs it. */
  POISON_CASE("poison-case"),
  /** A connection cut (right away, or just after a commit so that its ack is lost) and re-established. */
  CONNECTION_CUT("connection-cut"),
  /** A finished result held back on the worker until long after its lease was revoked. */
  LATE_RESULT("late-result"),
  /** A few store commits in a row fail (nothing applied) and the scheduler retries its batch. */
  STORE_FAILURE("store-failure"),
  /**
   * The store cannot be reached for up to 45 s: by the leading coordinator alone (a network partition; a
   * standby still reaches it and takes the lead once the lease lapses) or by every coordinator (the database
   * restarting). A commit waits for the store (up to the store's reconnect patience) and then fails; the
   * leader's looks at its lease fail, and past the lease it holds on in doubt: it renews if the row is still
   * its epoch when a look lands, and steps down if another epoch leads or its patience runs out.
   */
  STORE_CUT("store-cut"),
  /**
   * The leading coordinator is killed (kill -9) and restarted on the same durable store; it comes back as
   * the standby when the other coordinator took the lead meanwhile, or while its own lease has not lapsed.
   */
  COORDINATOR_CRASH("coordinator-crash"),
  /**
   * The leading coordinator stops (SIGSTOP) with its connections open and silent, then resumes: a standby
   * takes the lead under a higher epoch once the lease lapses, and the thawed leader writes nothing (the
   * store refuses its epoch) and steps down; a freeze shorter than the lease, or with no standby, is a pause
   * it leads on after.
   */
  COORDINATOR_FREEZE("coordinator-freeze"),
  /**
   * A user cancels a run mid-way: through the scheduler while the coordinator is up (its holders are told
   * to abandon, their late results fenced), or in the store directly while it is down.
   */
  RUN_CANCEL("run-cancel"),
  /**
   * A process that is not one of the fleet's connects to the worker port with a wrong worker token, or none:
   * it must be refused (and stop), and never be welcomed or given work.
   */
  IMPOSTOR("impostor");

  private final String siteName;

  FaultKind(String siteName) {
    this.siteName = siteName;
  }

  /** The site's name in traces and reports. */
  public String siteName() {
    return siteName;
  }
}
