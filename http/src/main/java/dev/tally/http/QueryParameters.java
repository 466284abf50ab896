package dev.tally.http;

import io.javalin.http.Context;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiParam;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The query parameters each route takes, read from its OpenAPI annotation (the one place a route's
 * parameters are written), and the check that a request names no other and none twice. A mistyped
 * parameter ({@code ?limt=5}) was ignored, so the request was answered with the defaults as if it had
 * been understood; a body's unknown field was already refused.
 *
 * <p>Thread-safety: immutable once built.
 */
final class QueryParameters {
  /** By {@code METHOD path-template}: the names the route's annotation declares. */
  private final Map<String, Set<String>> byRoute;

  private QueryParameters(Map<String, Set<String>> byRoute) {
    this.byRoute = byRoute;
  }

  /** The routes documented by the {@link OpenApi} annotations on the methods of {@code classes}. */
  static QueryParameters of(Class<?>... classes) {
    Map<String, Set<String>> byRoute = new HashMap<>();
    for (Class<?> c : classes) {
      for (Method m : c.getDeclaredMethods()) {
        OpenApi api = m.getAnnotation(OpenApi.class);
        if (api == null) {
          continue;
        }
        Set<String> names = Arrays.stream(api.queryParams()).map(OpenApiParam::name).collect(Collectors.toCollection(TreeSet::new));
        for (var method : api.methods()) {
          byRoute.put(key(method.name(), api.path()), names);
        }
      }
    }
    return new QueryParameters(Map.copyOf(byRoute));
  }

  private static String key(String method, String path) {
    return method.toUpperCase(Locale.ROOT) + " " + path;
  }

  /**
   * Refuses a request to a documented route that names a query parameter the route does not take, or one
   * twice. Routes without an annotation (the dashboard's files, the metrics) are not checked.
   *
   * @throws ProblemException 400 naming the parameter
   */
  void check(Context ctx) {
    Set<String> allowed = byRoute.get(key(ctx.method().name(), ctx.endpointHandlerPath()));
    if (allowed == null) {
      return;
    }
    for (Map.Entry<String, List<String>> p : ctx.queryParamMap().entrySet()) {
      if (p.getKey().isEmpty()) {
        continue; // "?limit=5&": an empty piece names nothing, as URL builders leave it
      }
      if (!allowed.contains(p.getKey())) {
        throw ProblemException.parameter(ProblemType.INVALID_REQUEST, p.getKey(), "unknown query parameter '"
            + p.getKey() + "'; " + (allowed.isEmpty() ? "this route takes none" : "this route takes " + String.join(", ", allowed)));
      }
      if (p.getValue().size() > 1) {
        throw ProblemException.parameter(ProblemType.INVALID_REQUEST, p.getKey(), "query parameter '" + p.getKey()
            + "' is given " + p.getValue().size() + " times; give it once");
      }
    }
  }
}
