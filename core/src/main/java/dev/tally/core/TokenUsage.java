package dev.tally.core;

/**
 * The tokens one paid response used, as the endpoint reported them ({@code usage.prompt_tokens} and {@code
 * usage.completion_tokens} of a Chat Completions response): what a run's token counters, its cost, its
 * tokens-per-minute budget and its token cap count.
 *
 * @param promptTokens tokens of the request, 0 to {@link #MAX_TOKENS}
 * @param completionTokens tokens of the answer, 0 to {@link #MAX_TOKENS}
 */
public record TokenUsage(long promptTokens, long completionTokens) {
  /**
   * The most tokens one response may report of either kind: a billion, far past any model's context; more
   * is a malformed report, refused where it is made and read off the wire.
   */
  public static final long MAX_TOKENS = 1_000_000_000L;

  /** A response that reported no usage. */
  public static final TokenUsage NONE = new TokenUsage(0, 0);

  /** @throws IllegalArgumentException if either count is negative or above {@link #MAX_TOKENS} */
  public TokenUsage {
    if (promptTokens < 0 || promptTokens > MAX_TOKENS || completionTokens < 0 || completionTokens > MAX_TOKENS) {
      throw new IllegalArgumentException("token counts must be from 0 to " + MAX_TOKENS + ", got " + promptTokens
          + " prompt and " + completionTokens + " completion tokens");
    }
  }

  /** Prompt and completion tokens together. */
  public long total() {
    return promptTokens + completionTokens;
  }
}
