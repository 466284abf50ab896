package dev.tally.protocol;

/**
 * The limits both ends of the worker protocol must agree on, in one place: a coordinator that sends more
 * than a worker accepts (or the other way round) breaks the conversation, so neither side states its own.
 */
public final class ProtocolLimits {
  private ProtocolLimits() {}

  /**
   * The most slots a worker may announce in its Hello; more is refused. Far beyond any machine's useful
   * parallelism: a larger number is a misconfigured worker that would lease most of a run to itself.
   */
  public static final int MAX_WORKER_SLOTS = 4_096;

  /**
   * The most assignments a coordinator may send a worker beyond its slots (its prefetch), and so the least
   * a worker's queue holds. Leased-but-unstarted jobs sit idle on one worker while others could run them;
   * a thousand is far beyond what keeps a worker busy between two commits.
   */
  public static final int MAX_PREFETCH = 1_024;

  /** The longest worker id or name in a Hello: ids are UUIDs and names host names. */
  public static final int MAX_ID_CHARS = 256;
}
