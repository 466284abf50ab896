package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.memory.InMemoryStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store that does not answer (a database restarting) under the API: a request that needs it gets a 503
 * problem with {@code Retry-After}, which names an incident in the server's log and not the store's URL or
 * user, and the same request succeeds once the store answers again.
 */
class StoreFailureApiTest {
  @TempDir Path dir;

  @Test
  void aStoreThatDoesNotAnswerIsA503WithRetryAfterThatLeaksNothingOfTheStore() throws Exception {
    InMemoryStore own = InMemoryStore.create(Clock.systemUTC());
    AtomicBoolean down = new AtomicBoolean();
    // Reads of runs fail while the store is "down", with the words a real store's failure has.
    Store store = (Store) Proxy.newProxyInstance(Store.class.getClassLoader(), new Class<?>[] {Store.class}, (proxy, method, args) -> {
      if (down.get() && (method.getName().equals("runs") || method.getName().equals("runPage"))) {
        throw new StoreException("runs: reading postgresql://db.internal:5432/evals?user=tally failed");
      }
      try {
        return method.invoke(own, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    });
    CoordinatorBuilder builder = Coordinator.builder().store(store);
    try (Coordinator coordinator = builder.start();
        ApiServer api = ApiServer.start(ApiServer.Settings.builder().bind("127.0.0.1", 0).spoolDirectory(dir.resolve("uploads"))
            .build(), coordinator, SchedulerMetrics.observing(builder))) {
      HttpClient http = HttpClient.newHttpClient();
      HttpRequest runs = HttpRequest.newBuilder(URI.create(api.url() + ApiServer.BASE + "/runs")).build();

      down.set(true);
      HttpResponse<String> refused = http.send(runs, HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
      assertThat(refused.headers().firstValue("Retry-After")).hasValue(ApiServer.STORE_RETRY_AFTER_SECONDS);
      assertThat(refused.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith(ApiServer.PROBLEM_JSON));
      JsonNode problem = TestApi.JSON.readTree(refused.body());
      assertThat(problem.get("type").asText()).isEqualTo("urn:tally:problem:unavailable");
      assertThat(problem.get("detail").asText()).contains("the store did not answer", "incident ");
      assertThat(refused.body()).doesNotContain("postgresql", "db.internal", "user=tally");

      down.set(false);
      HttpResponse<String> again = http.send(runs, HttpResponse.BodyHandlers.ofString());
      assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
    }
  }
}
