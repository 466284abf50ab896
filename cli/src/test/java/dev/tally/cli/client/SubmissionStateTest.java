package dev.tally.cli.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The state file of a submission: written before the key is used, found again by a later invocation of
 * the same submission (and only of the same), shared by concurrent ones, and forgotten only as asked.
 */
class SubmissionStateTest {
  @TempDir Path dir;

  private final Clock clock = Clock.fixed(Instant.parse("2026-12-01T10:00:00Z"), ZoneOffset.UTC);
  private final SubmissionState.Identity identity = new SubmissionState.Identity("http://127.0.0.1:8080", "/data/cases.jsonl",
      "ab12", "{\"name\":\"cases.jsonl\",\"evaluator\":{\"kind\":\"noop\"}}");

  @Test
  void theKeyIsOnDiskWhenBeginReturnsAndASecondInvocationFindsIt() throws Exception {
    SubmissionState state = new SubmissionState(dir.resolve("state"));
    SubmissionState.Pending first = state.begin(identity, () -> "key-1", clock);
    assertThat(first.resumed()).isFalse();
    JsonNode onDisk = new ObjectMapper().readTree(Files.readAllBytes(first.file()));
    assertThat(onDisk.get("key").asText()).isEqualTo("key-1");
    assertThat(onDisk.get("version").asInt()).isEqualTo(SubmissionState.VERSION);
    assertThat(onDisk.get("dataset").asText()).isEqualTo("/data/cases.jsonl");
    assertThat(onDisk.get("submission").get("evaluator").get("kind").asText()).isEqualTo("noop");
    assertThat(onDisk.get("startedAt").asText()).isEqualTo("2026-12-01T10:00:00Z");

    // Another process, later: the same arguments find the same key, not a new one.
    SubmissionState.Pending again = new SubmissionState(dir.resolve("state")).begin(identity, () -> "key-2", clock);
    assertThat(again.key()).isEqualTo("key-1");
    assertThat(again.resumed()).isTrue();
    assertThat(again.startedAt()).isEqualTo(first.startedAt());
  }

  @Test
  void anythingThatMakesAnotherSubmissionGetsAnotherKey() throws Exception {
    SubmissionState state = new SubmissionState(dir);
    AtomicInteger n = new AtomicInteger();
    String base = state.begin(identity, () -> "k" + n.incrementAndGet(), clock).key();
    List<SubmissionState.Identity> others = List.of(
        new SubmissionState.Identity("http://other:8080", identity.dataset(), identity.datasetSha256(), identity.submission()),
        new SubmissionState.Identity(identity.server(), "/data/other.jsonl", identity.datasetSha256(), identity.submission()),
        new SubmissionState.Identity(identity.server(), identity.dataset(), "cd34", identity.submission()),
        new SubmissionState.Identity(identity.server(), identity.dataset(), identity.datasetSha256(), "{\"evaluator\":{\"kind\":\"sleep\"}}"));
    Set<String> keys = new java.util.HashSet<>(Set.of(base));
    for (SubmissionState.Identity other : others) {
      keys.add(state.begin(other, () -> "k" + n.incrementAndGet(), clock).key());
    }
    assertThat(keys).hasSize(5);
  }

  @Test
  void forgettingDeletesTheFileSoTheNextSubmissionIsANewOne() throws Exception {
    SubmissionState state = new SubmissionState(dir);
    SubmissionState.Pending first = state.begin(identity, () -> "key-1", clock);
    state.forget(first);
    assertThat(first.file()).doesNotExist();
    assertThat(state.begin(identity, () -> "key-2", clock).key()).isEqualTo("key-2");
    state.forget(first); // an old key never deletes a newer submission's file
    assertThat(state.begin(identity, () -> "key-3", clock).key()).isEqualTo("key-2");
  }

  @Test
  void concurrentInvocationsOfOneSubmissionShareOneKey() throws Exception {
    int n = 8;
    CountDownLatch go = new CountDownLatch(1);
    AtomicInteger made = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<String>> keys = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Callable<String> begin = () -> {
          go.await();
          return new SubmissionState(dir).begin(identity, () -> "key-" + made.incrementAndGet(), clock).key();
        };
        keys.add(pool.submit(begin));
      }
      go.countDown();
      Set<String> distinct = ConcurrentHashMap.newKeySet();
      for (Future<String> k : keys) {
        distinct.add(k.get());
      }
      assertThat(distinct).containsExactly("key-1");
      assertThat(made).hasValue(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aFileThatIsNotAStateFileIsRefusedNamingIt() throws Exception {
    SubmissionState state = new SubmissionState(dir);
    Files.writeString(state.fileOf(identity), "not json");
    assertThatThrownBy(() -> state.begin(identity, () -> "k", clock)).isInstanceOf(IOException.class)
        .hasMessageContaining(state.fileOf(identity).toString()).hasMessageContaining("cannot be read");
  }

  @Test
  void theDirectoryIsTheOwnVariableElseXdgStateHomeElseUnderHome() {
    Path home = Path.of("/home/me");
    assertThat(SubmissionState.defaultDirectory(Map.of("TALLY_STATE_DIR", "/tmp/s", "XDG_STATE_HOME", "/x"), home)).isEqualTo(Path.of("/tmp/s"));
    assertThat(SubmissionState.defaultDirectory(Map.of("XDG_STATE_HOME", "/x"), home)).isEqualTo(Path.of("/x/tally/submissions"));
    assertThat(SubmissionState.defaultDirectory(Map.of("XDG_STATE_HOME", "relative"), home))
        .isEqualTo(Path.of("/home/me/.local/state/tally/submissions"));
    assertThat(SubmissionState.defaultDirectory(Map.of(), home)).isEqualTo(Path.of("/home/me/.local/state/tally/submissions"));
  }
}
