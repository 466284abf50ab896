package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class ReconnectorTest {
  private static final long S = TimeUnit.SECONDS.toNanos(1);

  private final Logger logger = (Logger) LoggerFactory.getLogger(Reconnector.class);
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  @BeforeEach
  void listen() {
    appender.start();
    logger.addAppender(appender);
  }

  @AfterEach
  void stopListening() {
    logger.detachAppender(appender);
  }

  private static Reconnector reconnector(Duration giveUpAfter) {
    return new Reconnector("coord:7070", new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(3)),
        giveUpAfter);
  }

  private List<String> warnings() {
    List<String> out = new ArrayList<>();
    for (ILoggingEvent e : appender.list) {
      if (e.getLevel() == Level.WARN) {
        out.add(e.getFormattedMessage());
      }
    }
    return out;
  }

  @Test
  void failuresAreWarnedAtTheFirstSecondFourthEighthAndSoOnWithTheNextRetry() {
    Reconnector r = reconnector(null);
    r.started(0);
    for (int i = 1; i <= 20; i++) {
      assertThat(r.attemptFailed("Connection refused", i * S).giveUp()).isFalse();
    }
    assertThat(warnings()).hasSize(5);
    assertThat(warnings()).extracting(w -> w.substring(0, w.indexOf(',')))
        .containsExactly("cannot reach coordinator coord:7070 (attempt 1", "cannot reach coordinator coord:7070 (attempt 2",
            "cannot reach coordinator coord:7070 (attempt 4", "cannot reach coordinator coord:7070 (attempt 8",
            "cannot reach coordinator coord:7070 (attempt 16");
    assertThat(warnings().get(4)).contains("16.0 s without one").contains("Connection refused").contains("next attempt in ");
  }

  @Test
  void aFailingWorkerIsNeverQuietLongerThanTheLimit() {
    Reconnector r = reconnector(null);
    r.started(0);
    long quiet = Reconnector.MAX_QUIET_WHILE_FAILING.toNanos();
    long t = 0;
    for (int i = 1; i <= 300; i++) { // 300 failures, 5 s apart: 25 minutes
      t = i * 5 * S;
      r.attemptFailed("unresolved address", t);
    }
    // Powers of two up to 256 give 9 lines; the quiet limit adds one about every five minutes after them.
    assertThat(warnings().size()).isBetween(10, 14);
    assertThat(t / quiet).isEqualTo(5);
  }

  @Test
  void aWelcomeStartsTheBackoffAndTheCountOverAndSaysHowLongTroubleLasted() {
    Reconnector r = reconnector(null);
    r.started(0);
    assertThat(r.welcomed(S)).as("no trouble reported: nothing to say").isEqualTo(-1);
    for (int i = 0; i < 10; i++) {
      r.attemptFailed("Connection refused", 2 * S);
    }
    assertThat(r.welcomed(12 * S)).isEqualTo(12 * S);
    assertThat(r.failures()).isZero();
    long delay = r.sessionLost(20 * S);
    assertThat(delay).as("the first window again").isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
    assertThat(r.welcomed(21 * S)).as("a lost session was reported").isEqualTo(S);
  }

  @Test
  void givingUpCountsFromTheLossOfTheLastSessionAndBringsTheLastAttemptToTheDeadline() {
    Reconnector r = reconnector(Duration.ofSeconds(30));
    r.started(0);
    r.welcomed(S);
    r.sessionLost(100 * S); // a long session: only the time since its loss counts
    Reconnector.Decision d = r.attemptFailed("Connection refused", 129 * S);
    assertThat(d.giveUp()).isFalse();
    assertThat(d.delayNanos()).isLessThanOrEqualTo(S);

    Reconnector.Decision last = r.attemptFailed("Connection refused", 130 * S);

    assertThat(last.giveUp()).isTrue();
    assertThat(last.message()).isEqualTo("gave up: no Welcome from the coordinator at coord:7070 for 30.0 s (give up after"
        + " 30.0 s); 2 attempts failed, the last: Connection refused");
  }

  @Test
  void aGiveUpTimeMustBePositive() {
    assertThatThrownBy(() -> reconnector(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("giveUpAfter must be positive");
  }
}
