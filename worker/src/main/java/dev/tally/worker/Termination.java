package dev.tally.worker;

import java.util.Objects;

/**
 * How a worker session ended, and what the {@code tally worker} process should exit with.
 *
 * @param kind how it ended
 * @param detail one sentence for the user
 */
public record Termination(Kind kind, String detail) {
  /** The ways a session ends. */
  public enum Kind {
    /**
     * A graceful drain finished: nothing was left running and every result was acknowledged. Exit 0.
     */
    DRAINED(0),
    /**
     * A graceful drain ended with work undone: its timeout passed with cases still running (they were
     * stopped, and the coordinator runs their jobs again), or no coordinator was connected to deliver the
     * last results to. Exit 1.
     */
    DRAIN_CUT_SHORT(1),
    /** No coordinator welcomed the worker within its give-up time. Exit 1. */
    GAVE_UP(1),
    /** Stopped at once ({@link WorkerSession#close()}): running cases were cancelled. */
    STOPPED(0),
    /**
     * The coordinator refused the worker for a reason retrying cannot mend (a missing or wrong worker token,
     * or plaintext where it requires TLS): the worker stopped instead of reconnecting for ever. Exit 3, so
     * that a supervisor can tell it from a crash and not restart it until its configuration changes.
     */
    REFUSED(3);

    private final int exitCode;

    Kind(int exitCode) {
      this.exitCode = exitCode;
    }

    /**
     * The {@code tally worker} exit code for this ending (a stop by a second signal exits with that
     * signal's conventional code instead, decided by the command).
     */
    public int exitCode() {
      return exitCode;
    }
  }

  /** @throws NullPointerException if an argument is null */
  public Termination {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(detail, "detail");
  }
}
