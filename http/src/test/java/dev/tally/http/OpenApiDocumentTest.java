package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAPI document and the server agree: every route the server registers is in the document, and
 * every operation of the document is a route the server answers. A handler added without its {@code
 * @OpenApi} annotation, or an annotation whose path has a typo, fails here.
 */
class OpenApiDocumentTest {
  @TempDir Path dir;

  @Test
  void everyRegisteredRouteIsDocumentedAndEveryDocumentedOperationIsARoute() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      HttpResponse<String> r = t.get(ApiServer.OPENAPI_PATH);
      assertThat(r.statusCode()).isEqualTo(200);
      JsonNode doc = TestApi.json(r);
      assertThat(doc.get("openapi").asText()).startsWith("3.");
      assertThat(doc.get("info").get("title").asText()).isEqualTo("Tally API");

      Set<String> documented = new TreeSet<>();
      for (Iterator<String> paths = doc.get("paths").fieldNames(); paths.hasNext(); ) {
        String path = paths.next();
        for (Iterator<String> methods = doc.get("paths").get(path).fieldNames(); methods.hasNext(); ) {
          documented.add(methods.next().toUpperCase(Locale.ROOT) + " " + path);
        }
      }
      Set<String> registered = new TreeSet<>();
      for (ApiServer.Route route : t.api.routes()) {
        if (Set.of("GET", "POST", "PUT", "PATCH", "DELETE").contains(route.method())) {
          registered.add(route.method() + " " + route.path());
        }
      }
      assertThat(registered).isNotEmpty();
      assertThat(documented).isEqualTo(registered);
      // Problems are documented as what they are.
      assertThat(doc.get("components").get("schemas").has("Problem")).isTrue();
    }
  }
}
