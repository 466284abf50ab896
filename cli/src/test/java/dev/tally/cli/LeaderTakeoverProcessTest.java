package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.simulation.Checker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two {@code tally server}s on one store (a SQLite file, and a PostgreSQL database), one leading and one standing by, with two {@code tally
 * worker}s that know both: the leader killed with {@code kill -9}, or frozen with SIGSTOP and thawed after the
 * takeover. The standby leads within 5 s (the defaults: a 3 s lease, looked at every 0.5 s), the run finishes
 * with every case recorded once, and a thawed leader writes nothing under its old epoch (the store's own count
 * of its epoch's writes stops at the takeover) and steps down.
 */
class LeaderTakeoverProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Cases of 400 ms on 4 slots: some 10 s of work, so that the leader falls mid-run. */
  private static final int CASES = 100;
  private static final String EVALUATOR = "{\"kind\": \"sleep\", \"millis\": 400}";
  /** What the issue promises: a standby leads within 5 s of the leader's kill -9 or SIGSTOP. */
  private static final Duration TAKEOVER = Duration.ofSeconds(5);

  @TempDir Path dir;


  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"sqlite", "postgresql"})
  void aStandbyLeadsWithinFiveSecondsOfTheLeadersKillAndTheRunFinishesEachCaseOnce(String storeKind) throws Exception {
    Fleet fleet = startFleet(StoreUnderTest.of(storeKind, dir));
    try {
      String leaderUrl = fleet.a.serverUrl();
      String standbyUrl = fleet.b.serverUrl();
      // The standby serves reads, and answers a write with 503 naming the leader.
      assertThat(get(standbyUrl + "/api/v1/runs/" + fleet.runId).get("id").asLong()).isEqualTo(fleet.runId);
      HttpResponse<String> refused = send(HttpRequest.newBuilder(URI.create(standbyUrl + "/api/v1/runs/" + fleet.runId + "/cancel"))
          .POST(HttpRequest.BodyPublishers.noBody()));
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
      JsonNode problem = JSON.readTree(refused.body());
      assertThat(problem.get("type").asText()).isEqualTo("urn:tally:problem:not-leader");
      assertThat(problem.get("leader").asText()).isEqualTo(leaderUrl);
      assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");

      await("the run under way").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> recorded(leaderUrl) >= 10);
      killLeaderAndAwaitTheStandbysLead(fleet);

      finishAndCheck(fleet, standbyUrl);
      // The leader row names its API as soon as the API is up (it renews at once), so the standby can say it.
      assertThat(fleet.b.output()).contains("tally server: standing by: epoch 1 leads the store at workers=127.0.0.1:"
          + fleet.portA + " api=" + leaderUrl, "tally server: leading the store under epoch 2", "resuming run " + fleet.runId);
    } catch (Throwable t) {
      fleet.printLogs();
      throw t;
    } finally {
      fleet.close();
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"sqlite", "postgresql"})
  void aFrozenLeaderIsSucceededAndOnceThawedWritesNothingUnderItsOldEpochAndStepsDown(String storeKind) throws Exception {
    Fleet fleet = startFleet(StoreUnderTest.of(storeKind, dir));
    try {
      String leaderUrl = fleet.a.serverUrl();
      String standbyUrl = fleet.b.serverUrl();
      await("the run under way").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> recorded(leaderUrl) >= 10);
      fleet.db.freezeOutsideWriteTransaction(fleet.a.process.pid());
      long frozenAt = System.nanoTime();
      long writesBeforeThaw;
      try {
        long ledAfter = awaitEpoch(fleet.db, 2, frozenAt);
        assertThat(Duration.ofNanos(ledAfter)).as("from the SIGSTOP to the standby's lead").isLessThan(TAKEOVER);
        // The new leader at work before the old one wakes: its cases are recorded.
        long atTakeover = recorded(standbyUrl);
        await("the new leader records").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
            .until(() -> recorded(standbyUrl) >= atTakeover + 5);
        writesBeforeThaw = epochWrites(fleet.db, 1);
      } finally {
        Signals.send(fleet.a.process.pid(), "CONT");
      }
      // Thawed, it finds its epoch stale (its renewal or its next commit), steps down and exits 1.
      assertThat(fleet.a.waitFor(60)).as(fleet.a.output()).isEqualTo(Main.EXIT_FAILED);
      // It closes by itself, without reading its store again (after a step-down the store may be why).
      assertThat(fleet.a.output()).contains("tally server: stepped down: ", "epoch 2", "tally server: stopped",
          "unfinished runs stay in").doesNotContain("closing did not finish");
      assertThat(epochWrites(fleet.db, 1)).as("write transactions committed under epoch 1, at the takeover and after the thaw")
          .isEqualTo(writesBeforeThaw);

      finishAndCheck(fleet, standbyUrl);
      assertThat(epochWrites(fleet.db, 1)).isEqualTo(writesBeforeThaw);
      assertThat(epochWrites(fleet.db, 2)).isPositive();
    } catch (Throwable t) {
      fleet.printLogs();
      throw t;
    } finally {
      fleet.close();
    }
  }

  /**
   * PostgreSQL restarted under a leader and a standby, then the leader killed: the standby still takes the
   * lead. Its write connection died with the restart, and it only ever swaps the leader row: before, every
   * swap failed on the dead connection and nobody led again (a fleet user's trial).
   *
   * <p>Either may lead once the database is back: the leader renews if it looks first; if the restart
   * outlasted its lease, the standby may win the row first, and the old leader then steps down (CI's restart
   * once took longer than the 3 s lease, and this test, which assumed the leader, failed to reach it).
   */
  @Test
  void aStandbyTakesTheLeadAfterPostgresRestartedUnderBoth() throws Exception {
    try (dev.tally.store.PostgresFixture.Dedicated server = dev.tally.store.PostgresFixture.Dedicated.start()) {
      Fleet fleet = startFleet(new StoreUnderTest(server.createDatabase("restarted"), java.util.Map.of()));
      try {
        String leaderUrl = fleet.a.serverUrl();
        String standbyUrl = fleet.b.serverUrl();
        await("the run under way").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> recorded(leaderUrl) >= 10);
        server.stopImmediately();
        server.restart();
        // Both find their connections dead at their next looks (the leader's renewal, the standby's swap try).
        // The standby serves reads whoever leads; its reads fail until its pool has a live connection again.
        await("the run goes on after the restart").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
            .ignoreExceptions().until(() -> recorded(standbyUrl) >= 20);
        if (leaderEpoch(fleet.db) == 1) {
          killLeaderAndAwaitTheStandbysLead(fleet);
        } else {
          assertThat(fleet.a.waitFor(60)).as(fleet.a.output()).isEqualTo(Main.EXIT_FAILED);
          assertThat(fleet.a.output()).contains("tally server: stepped down: ", "epoch 2");
          assertThat(leaderEpoch(fleet.db)).isEqualTo(2);
        }
        finishAndCheck(fleet, standbyUrl);
      } catch (Throwable t) {
        fleet.printLogs();
        throw t;
      } finally {
        fleet.close();
      }
    }
  }

  /** Kills the leader (a) with kill -9 and waits for the standby (b) to lead under epoch 2, within {@link #TAKEOVER}. */
  private static void killLeaderAndAwaitTheStandbysLead(Fleet fleet) throws IOException, InterruptedException {
    long killedAt = System.nanoTime();
    Signals.send(fleet.a.process.pid(), "KILL");
    fleet.a.process.waitFor();
    long ledAfter = awaitEpoch(fleet.db, 2, killedAt);
    assertThat(Duration.ofNanos(ledAfter)).as("from the kill -9 to the standby's lead").isLessThan(TAKEOVER);
  }

  /** Two servers (a leads, b stands by), two workers that know both, and a run submitted to a. */
  private Fleet startFleet(StoreUnderTest db) throws Exception {
    int portA = Ports.freeFixedLoopbackPort();
    int portB;
    do {
      portB = Ports.freeFixedLoopbackPort();
    } while (portB == portA);
    Fleet fleet = new Fleet(db, portA, portB);
    fleet.a = TallyProcess.start(dir, "server-a.log", server(db, portA), db.env());
    String leaderUrl = fleet.a.serverUrl();
    fleet.b = TallyProcess.start(dir, "server-b.log", server(db, portB), db.env());
    fleet.b.serverUrl();
    await("b standing by").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
        .until(() -> fleet.b.output().contains("tally server: standing by"));
    String coordinators = "--coordinator=127.0.0.1:" + portA + ",127.0.0.1:" + portB;
    for (int w = 1; w <= 2; w++) {
      fleet.workers.add(TallyProcess.start(dir, "worker-" + w + ".log", List.of("worker", coordinators, "--slots=2", "--name=w" + w)));
    }
    for (int i = 0; i < CASES; i++) {
      fleet.ids.add("c" + i);
    }
    fleet.runId = submit(leaderUrl, fleet.ids);
    return fleet;
  }

  private static List<String> server(StoreUnderTest db, int port) {
    return List.of("server", db.dbArgument(), "--http=127.0.0.1:0", "--listen=127.0.0.1:" + port, "--workers=0",
        "--heartbeat-interval=200ms", "--detection-window=2s");
  }

  /** Waits for the run to finish on the new leader and checks it: every case recorded once. */
  private void finishAndCheck(Fleet fleet, String url) throws Exception {
    await("the run finished on the new leader").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
        .until(() -> get(url + "/api/v1/runs/" + fleet.runId).get("state").asText().equals("finished"));
    JsonNode counters = get(url + "/api/v1/runs/" + fleet.runId).get("counters");
    assertThat(counters.get("recorded").asLong()).isEqualTo(CASES);
    assertThat(counters.get("passed").asLong()).isEqualTo(CASES);
    assertThat(resultIds(url, fleet.runId)).as("each case once").containsExactlyInAnyOrderElementsOf(fleet.ids);
    Signals.send(fleet.b.process.pid(), "TERM");
    assertThat(fleet.b.waitFor(60)).as(fleet.b.output()).isZero();
    try (dev.tally.store.JdbcStore store = fleet.db.openExisting()) {
      Checker.RunCheck check = Checker.checkRun(store, fleet.runId, fleet.ids);
      assertThat(check.violations()).isEmpty();
      assertThat(check.counters().recorded()).isEqualTo(CASES);
    }
  }

  /**
   * Polls the store until its leader row reaches {@code epoch}.
   *
   * @return the time from {@code sinceNanos} to the first poll that saw it, in ns
   */
  private static long awaitEpoch(StoreUnderTest db, long epoch, long sinceNanos) {
    long[] seenAt = new long[1];
    await("epoch " + epoch + " leads").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
      if (leaderEpoch(db) >= epoch) {
        seenAt[0] = System.nanoTime();
        return true;
      }
      return false;
    });
    return seenAt[0] - sinceNanos;
  }

  private static long leaderEpoch(StoreUnderTest db) throws SQLException {
    return queryLong(db, "SELECT epoch FROM coordinator_leader WHERE id = 1", -1);
  }

  /** How many write transactions the store committed under {@code epoch} ({@code leader_epochs.writes}). */
  private static long epochWrites(StoreUnderTest db, long epoch) throws SQLException {
    return queryLong(db, "SELECT writes FROM leader_epochs WHERE epoch = ?", epoch);
  }

  private static long queryLong(StoreUnderTest db, String sql, long parameter) throws SQLException {
    try (Connection c = db.connect();
        PreparedStatement s = c.prepareStatement(sql)) {
      s.setQueryTimeout(10);
      if (parameter >= 0) {
        s.setLong(1, parameter);
      }
      try (ResultSet rs = s.executeQuery()) {
        return rs.next() ? rs.getLong(1) : -1;
      }
    }
  }

  private long submit(String url, List<String> ids) throws IOException, InterruptedException {
    StringBuilder body = new StringBuilder("{\"name\": \"takeover\", \"evaluator\": " + EVALUATOR
        + ", \"settings\": {\"maxAttempts\": 5, \"caseTimeout\": \"2m\"}, \"cases\": [");
    for (int i = 0; i < ids.size(); i++) {
      body.append(i == 0 ? "" : ", ").append("{\"id\": \"").append(ids.get(i)).append("\"}");
    }
    body.append("]}");
    HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs"))
        .header("Content-Type", "application/json").header("Idempotency-Key", "\"takeover-" + UUID.randomUUID() + "\"")
        .POST(HttpRequest.BodyPublishers.ofString(body.toString())));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return JSON.readTree(r.body()).get("id").asLong();
  }

  /** A client per server: one's connections to the frozen leader must not hold up requests to the new one. */
  private final java.util.Map<String, HttpClient> clients = new java.util.concurrent.ConcurrentHashMap<>();

  private HttpResponse<String> send(HttpRequest.Builder request) throws IOException, InterruptedException {
    HttpRequest built = request.timeout(Duration.ofSeconds(30)).build();
    HttpClient http = clients.computeIfAbsent(built.uri().getAuthority(), a -> HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build());
    return http.send(built, HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode get(String url) throws IOException, InterruptedException {
    HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(url)));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private long recorded(String url) throws IOException, InterruptedException {
    return get(url + "/api/v1/runs/1").get("counters").get("recorded").asLong();
  }

  private List<String> resultIds(String url, long run) throws IOException, InterruptedException {
    HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs/" + run + "/results")));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    List<String> ids = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (String line : r.body().split("\n")) {
      if (!line.isBlank()) {
        String id = JSON.readTree(line).get("id").asText();
        ids.add(id);
        seen.add(id);
      }
    }
    assertThat(seen).as("no case twice").hasSameSizeAs(ids);
    return ids;
  }

  /** The processes of one test, closed together. */
  private static final class Fleet implements AutoCloseable {
    final StoreUnderTest db;
    final int portA;
    final int portB;
    TallyProcess a;
    TallyProcess b;
    final List<TallyProcess> workers = new ArrayList<>();
    final List<String> ids = new ArrayList<>();
    long runId;

    Fleet(StoreUnderTest db, int portA, int portB) {
      this.db = db;
      this.portA = portA;
      this.portB = portB;
    }

    /** Every process's output, for a failure's report, and the threads of the standby if it still runs. */
    void printLogs() {
      if (b != null && b.process.isAlive()) {
        try {
          Process dump = new ProcessBuilder("jcmd", Long.toString(b.process.pid()), "Thread.print").redirectErrorStream(true).start();
          System.out.println("==== threads of server-b\n" + new String(dump.getInputStream().readAllBytes()));
        } catch (IOException e) {
          System.out.println("(no thread dump: " + e + ")");
        }
      }
      for (TallyProcess p : java.util.stream.Stream.concat(java.util.stream.Stream.of(a, b), workers.stream()).toList()) {
        if (p != null) {
          System.out.println("==== " + p.log.getFileName() + "\n" + p.output());
        }
      }
    }

    @Override
    public void close() {
      workers.forEach(TallyProcess::close);
      if (a != null) {
        a.close();
      }
      if (b != null) {
        b.close();
      }
    }
  }
}
