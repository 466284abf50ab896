package dev.tally.http;

import dev.tally.core.store.RunPage;
import io.javalin.http.Context;

/**
 * Reads path and query parameters, refusing a bad one with a 400 problem that names it.
 *
 * <p>Thread-safety: stateless.
 */
final class Params {
  /** The most items one page holds: the store's page limit ({@link RunPage#MAX_LIMIT}), its one owner. */
  static final int MAX_PAGE_LIMIT = RunPage.MAX_LIMIT;

  /** Items per page when {@code limit} is not given. */
  static final int DEFAULT_PAGE_LIMIT = 100;

  private Params() {}

  /** The run id in the path. */
  static long runId(Context ctx) {
    return positiveLong(ctx.pathParam("id"), "id");
  }

  /** An optional positive whole-number query parameter, or {@code absent}. */
  static long optionalLong(Context ctx, String name, long absent, long min) {
    String value = ctx.queryParam(name);
    if (value == null || value.isEmpty()) {
      return absent;
    }
    long n;
    try {
      n = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, name, name + " must be a whole number, got '" + value + "'");
    }
    if (n < min) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, name, name + " must be >= " + min + ", got " + n);
    }
    return n;
  }

  /** The page size: {@code limit}, from 1 to {@link #MAX_PAGE_LIMIT}, default {@link #DEFAULT_PAGE_LIMIT}. */
  static int limit(Context ctx) {
    long n = optionalLong(ctx, "limit", DEFAULT_PAGE_LIMIT, 1);
    if (n > MAX_PAGE_LIMIT) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, "limit",
          "limit must be from 1 to " + MAX_PAGE_LIMIT + ", got " + n);
    }
    return (int) n;
  }

  /** An optional query parameter that must be one of {@code allowed}; null if absent. */
  static String oneOf(Context ctx, String name, java.util.List<String> allowed) {
    String value = ctx.queryParam(name);
    if (value == null || value.isEmpty()) {
      return null;
    }
    if (!allowed.contains(value)) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, name,
          name + " must be one of " + String.join(", ", allowed) + ", got '" + value + "'");
    }
    return value;
  }

  private static long positiveLong(String value, String name) {
    try {
      long n = Long.parseLong(value);
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw ProblemException.parameter(ProblemType.INVALID_REQUEST, name, name + " must be a positive whole number, got '" + value + "'");
  }
}
