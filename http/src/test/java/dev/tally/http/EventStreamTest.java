package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.store.RunCounters;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The event stream, read by a real client over a socket. */
class EventStreamTest {
  @TempDir Path dir;

  @Test
  void aRequestThatDoesNotAcceptAnEventStreamIsRefusedNamingTheHeader() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      HttpResponse<String> r = t.get(ApiServer.BASE + "/events");
      assertThat(r.statusCode()).isEqualTo(406);
      assertThat(TestApi.json(r).get("header").asText()).isEqualTo("Accept");
    }
  }

  @Test
  void aClientSeesARunProgressToItsEndAndIsDroppedWhenItGoes() throws Exception {
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().eventPeriodMillis(50), null)) {
      HttpResponse<InputStream> stream = t.client.send(t.request(ApiServer.BASE + "/events").header("Accept", "text/event-stream").GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      assertThat(stream.statusCode()).isEqualTo(200);
      assertThat(stream.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
      await().atMost(10, TimeUnit.SECONDS).until(() -> t.api.eventClients() == 1);

      long runId = t.createRun("events.jsonl", 20, "noop");
      t.withWorker(2);
      t.coordinator.submit(runId);

      List<JsonNode> runEvents = new ArrayList<>();
      try (BufferedReader in = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
        String event = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (String line; System.nanoTime() < deadline && (line = in.readLine()) != null; ) {
          if (line.startsWith("event: ")) {
            event = line.substring(7);
          } else if (line.startsWith("data: ") && "run".equals(event)) {
            JsonNode run = TestApi.JSON.readTree(line.substring(6));
            runEvents.add(run);
            if (run.get("state").asText().equals("finished")) {
              break;
            }
          }
        }
      }
      assertThat(runEvents).isNotEmpty();
      JsonNode last = runEvents.get(runEvents.size() - 1);
      assertThat(last.get("id").asLong()).isEqualTo(runId);
      assertThat(last.get("state").asText()).isEqualTo("finished");
      assertThat(last.get("counters").get("passed").asLong()).isEqualTo(20);
      // The client closed its side: the server drops it (its next write fails) and holds nothing for it.
      await().atMost(20, TimeUnit.SECONDS).until(() -> t.api.eventClients() == 0);
    }
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a missing event leaves the read waiting
  void aRunThatStartsAndEndsBetweenTwoLooksIsStillSentEnded() throws Exception {
    // The publisher's own period never comes in this test: it looks only when the test says.
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().eventPeriodMillis(3_600_000), null)) {
      HttpResponse<InputStream> stream = listenAndLookOnce(t); // a look with no run at all

      // A client that read this run while it was running (GET /runs/{id}) waits for its end.
      t.withWorker(2);
      RunCounters ended = t.runToEnd("quick.jsonl", 5);
      assertThat(ended.passed()).isEqualTo(5);
      t.api.publishEventsNow();
      t.api.publishEventsNow(); // sent once, not at every look

      List<JsonNode> runEvents = new ArrayList<>();
      try (BufferedReader in = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
        String event = null;
        for (String line; runEvents.isEmpty() && (line = in.readLine()) != null; ) {
          if (line.startsWith("event: ")) {
            event = line.substring(7);
          } else if (line.startsWith("data: ") && "run".equals(event)) {
            runEvents.add(TestApi.JSON.readTree(line.substring(6)));
          }
        }
        assertThat(runEvents).hasSize(1);
        assertThat(runEvents.get(0).get("state").asText()).isEqualTo("finished");
        assertThat(runEvents.get(0).get("counters").get("passed").asLong()).isEqualTo(5);
        // A third look with a later run: the next event is that run's, not the first one's again.
        RunCounters second = t.runToEnd("second.jsonl", 3);
        assertThat(second.passed()).isEqualTo(3);
        t.api.publishEventsNow();
        for (String line; (line = in.readLine()) != null; ) {
          if (line.startsWith("event: ")) {
            event = line.substring(7);
          } else if (line.startsWith("data: ") && "run".equals(event)) {
            assertThat(TestApi.JSON.readTree(line.substring(6)).get("dataset").asText()).as("the next run event's run").isEqualTo("second.jsonl");
            break;
          }
        }
      }
    }
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a missing event leaves the read waiting
  void aRunsEndIsSentAtOnceWithoutWaitingForThePublishersPeriod() throws Exception {
    // The period never comes: only the coordinator's word that the run ended can make the publisher look.
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().eventPeriodMillis(3_600_000), null)) {
      HttpResponse<InputStream> stream = listenAndLookOnce(t);
      t.withWorker(2);
      RunCounters ended = t.runToEnd("ends.jsonl", 4);
      assertThat(ended.passed()).isEqualTo(4);
      try (BufferedReader in = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
        JsonNode run = nextRunEvent(in);
        assertThat(run.get("state").asText()).isEqualTo("finished");
        assertThat(run.get("counters").get("passed").asLong()).isEqualTo(4);
      }
    }
  }

  /**
   * A client that connects after the end it waits for (a script that submitted, then listens), while another
   * client has heard that end already: it is sent the run as it is, ended, when it connects.
   */
  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a missing event leaves the read waiting
  void aClientThatConnectsAfterARunEndedIsSentItsEnd() throws Exception {
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().eventPeriodMillis(3_600_000), null)) {
      HttpResponse<InputStream> first = listenAndLookOnce(t);
      t.withWorker(2);
      assertThat(t.runToEnd("early.jsonl", 3).passed()).isEqualTo(3);
      try (BufferedReader in = new BufferedReader(new InputStreamReader(first.body(), StandardCharsets.UTF_8))) {
        assertThat(nextRunEvent(in).get("state").asText()).as("the first client heard the end").isEqualTo("finished");
      }
      HttpResponse<InputStream> late = t.client.send(t.request(ApiServer.BASE + "/events").header("Accept", "text/event-stream").GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      try (BufferedReader in = new BufferedReader(new InputStreamReader(late.body(), StandardCharsets.UTF_8))) {
        JsonNode run = nextRunEvent(in);
        assertThat(run.get("dataset").asText()).isEqualTo("early.jsonl");
        assertThat(run.get("state").asText()).isEqualTo("finished");
        assertThat(run.get("counters").get("passed").asLong()).isEqualTo(3);
      }
    }
  }

  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a missing event leaves the read waiting
  void aRunWhoseErrorsAreRetriedQuicklyIsSentEndedAgain() throws Exception {
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().eventPeriodMillis(3_600_000), null)) {
      HttpResponse<InputStream> stream = listenAndLookOnce(t);
      t.withWorker(2);
      // An evaluator no worker knows, one attempt per case: every case fails at once (out of attempts).
      List<dev.tally.core.CaseRecord> cases = List.of(new dev.tally.core.CaseRecord(0, "e0", "{\"id\":\"e0\"}"),
          new dev.tally.core.CaseRecord(1, "e1", "{\"id\":\"e1\"}"));
      dev.tally.core.EvaluatorSpec unknown = new dev.tally.core.EvaluatorSpec("no-such-kind", java.util.Map.of(), Duration.ofMinutes(1));
      long runId = t.coordinator.store().createRun(new dev.tally.core.store.RunSpec("errors.jsonl", unknown, 1), cases);
      assertThat(t.coordinator.submit(runId).get(60, TimeUnit.SECONDS).jobsFailed()).isEqualTo(2);
      t.api.publishEventsNow();

      try (BufferedReader in = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
        JsonNode first = nextRunEvent(in);
        assertThat(first.get("state").asText()).isEqualTo("finished");
        // Retried and ended again between two looks (a client that read it running waits for this end).
        long firstEnd = t.coordinator.store().run(runId).orElseThrow().finishedAtMillis();
        assertThat(t.coordinator.retryErrors(runId).status()).isEqualTo(dev.tally.core.store.RetryResult.Status.RETRIED);
        await().atMost(60, TimeUnit.SECONDS).until(() -> t.coordinator.store().run(runId).orElseThrow().ended());
        assertThat(t.coordinator.store().run(runId).orElseThrow().finishedAtMillis()).isGreaterThan(firstEnd);
        t.api.publishEventsNow();
        JsonNode again = nextRunEvent(in);
        assertThat(again.get("id").asLong()).isEqualTo(runId);
        assertThat(again.get("state").asText()).isEqualTo("finished");
        assertThat(again.get("finishedAt").asText()).isNotEqualTo(first.get("finishedAt").asText());
      }
    }
  }

  /** Opens the event stream as a client, waits until the server counts it, and has the publisher look once. */
  private static HttpResponse<InputStream> listenAndLookOnce(TestApi t) throws Exception {
    HttpResponse<InputStream> stream = t.client.send(t.request(ApiServer.BASE + "/events").header("Accept", "text/event-stream").GET().build(),
        HttpResponse.BodyHandlers.ofInputStream());
    assertThat(stream.statusCode()).isEqualTo(200);
    await().atMost(10, TimeUnit.SECONDS).until(() -> t.api.eventClients() == 1);
    t.api.publishEventsNow();
    return stream;
  }

  /** The next {@code event: run}'s object on the stream. */
  private static JsonNode nextRunEvent(BufferedReader in) throws java.io.IOException {
    String event = null;
    for (String line; (line = in.readLine()) != null; ) {
      if (line.startsWith("event: ")) {
        event = line.substring(7);
      } else if (line.startsWith("data: ") && "run".equals(event)) {
        return TestApi.JSON.readTree(line.substring(6));
      }
    }
    throw new AssertionError("the stream ended");
  }
}
