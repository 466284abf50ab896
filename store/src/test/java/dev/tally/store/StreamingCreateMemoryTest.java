package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run of a million cases is created through a {@code CaseSource} without the cases ever being in memory
 * together: in a JVM whose heap is far smaller than the cases (about 230 MB of case text against a
 * {@value #HEAP} heap), the streamed creation succeeds, and the same cases held in a list first do not fit.
 * The child process prints the time and the heap's peak, which this test prints too.
 */
class StreamingCreateMemoryTest {
  /** A million cases: the example of a large upload. */
  static final int CASES = 1_000_000;

  /** The child's heap: room for the store's statements and one case at a time, not for the cases. */
  static final String HEAP = "64m";

  @TempDir Path dir;

  private record Child(int exit, String out) {}

  private Child create(String how) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + HEAP,
        "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), CreateManyCases.class.getName(),
        dir.resolve(how + ".db").toString(), Integer.toString(CASES), how)
        .redirectErrorStream(true).start();
    // Generous for a loaded 2-core machine: a million inserts take seconds, not minutes.
    boolean ended = p.waitFor(5, TimeUnit.MINUTES);
    if (!ended) {
      p.destroyForcibly();
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Child(ended ? p.exitValue() : -1, out);
  }

  @Test
  void aMillionCasesStreamIntoTheStoreInAHeapTooSmallToHoldThem() throws Exception {
    Child streamed = create("stream");
    System.out.println("streamed: " + streamed.out().strip());
    assertThat(streamed.exit()).as(streamed.out()).isZero();
    Matcher m = Pattern.compile("jobs=(\\d+) millis=(\\d+) heapPeakBytes=(\\d+)").matcher(streamed.out());
    assertThat(m.find()).as(streamed.out()).isTrue();
    assertThat(Long.parseLong(m.group(1))).isEqualTo(CASES);

    Child listed = create("list");
    System.out.println("listed first: exit " + listed.exit() + ", " + List.of(listed.out().strip().split("\n")).get(0));
    assertThat(listed.exit()).as("the same cases held in a list do not fit the heap: the measurement bites")
        .isNotZero();
    assertThat(listed.out()).contains("OutOfMemoryError");
  }
}
