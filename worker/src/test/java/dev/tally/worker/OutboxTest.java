package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.protocol.Result;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class OutboxTest {
  private static Result result(long jobId) {
    return Result.newBuilder().setJobId(jobId).setToken(1).build();
  }

  @Test
  void slotResultsHoldTheirRoomUntilAckedAndAnswersTakeNone() {
    Outbox outbox = new Outbox(2);
    assertThat(outbox.tryReserveRoom()).isTrue();
    outbox.addReserved(new JobKey(1, 1), result(1));
    outbox.addUnreserved(new JobKey(2, 1), result(2)); // a refusal: no room taken
    assertThat(outbox.tryReserveRoom()).isTrue();
    outbox.addReserved(new JobKey(3, 1), result(3));

    assertThat(outbox.tryReserveRoom()).as("full").isFalse();
    assertThat(outbox.size()).isEqualTo(3);
    assertThat(outbox.keys()).containsExactly(new JobKey(1, 1), new JobKey(2, 1), new JobKey(3, 1));

    assertThat(outbox.remove(new JobKey(2, 1))).isTrue();
    assertThat(outbox.tryReserveRoom()).as("an answer's ack frees nothing").isFalse();
    assertThat(outbox.remove(new JobKey(1, 1))).isTrue();
    assertThat(outbox.tryReserveRoom()).isTrue();
    assertThat(outbox.remove(new JobKey(1, 1))).as("already gone").isFalse();
  }

  @Test
  void droppingEverythingFreesTheRoomOfEachSlotResult() {
    Outbox outbox = new Outbox(2);
    outbox.tryReserveRoom();
    outbox.addReserved(new JobKey(1, 1), result(1));
    outbox.tryReserveRoom();
    outbox.addReserved(new JobKey(2, 1), result(2));
    outbox.addUnreserved(new JobKey(3, 1), result(3));

    assertThat(outbox.dropAll()).isEqualTo(3);

    assertThat(outbox.isEmpty()).isTrue();
    assertThat(outbox.size()).isZero();
    assertThat(outbox.tryReserveRoom()).isTrue();
    assertThat(outbox.tryReserveRoom()).isTrue();
    assertThat(outbox.tryReserveRoom()).isFalse();
  }

  @Test
  void aSlotWaitingForRoomGetsItWhenAResultIsAcked() throws Exception {
    Outbox outbox = new Outbox(1);
    outbox.tryReserveRoom();
    outbox.addReserved(new JobKey(1, 1), result(1));
    AtomicReference<Boolean> got = new AtomicReference<>();
    Thread slot = new Thread(() -> {
      try {
        got.set(outbox.awaitRoom());
      } catch (InterruptedException e) {
        got.set(null);
      }
    });
    slot.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> slot.getState() == Thread.State.WAITING);
    assertThat(got.get()).isNull();

    outbox.remove(new JobKey(1, 1));

    slot.join(10_000);
    assertThat(got.get()).isTrue();
  }

  @Test
  void closeReleasesEverySlotWaitingForRoomAndRefusesRoomAfterwards() throws Exception {
    Outbox outbox = new Outbox(1);
    outbox.tryReserveRoom();
    AtomicReference<Boolean> first = new AtomicReference<>();
    AtomicReference<Boolean> second = new AtomicReference<>();
    Thread a = waiter(outbox, first);
    Thread b = waiter(outbox, second);
    await().atMost(Duration.ofSeconds(10))
        .until(() -> a.getState() == Thread.State.WAITING && b.getState() == Thread.State.WAITING);

    outbox.close();

    a.join(10_000);
    b.join(10_000);
    assertThat(first.get()).isFalse();
    assertThat(second.get()).isFalse();
    assertThat(outbox.tryReserveRoom()).isFalse();
  }

  private static Thread waiter(Outbox outbox, AtomicReference<Boolean> into) {
    Thread t = new Thread(() -> {
      try {
        into.set(outbox.awaitRoom());
      } catch (InterruptedException e) {
        into.set(null);
      }
    });
    t.start();
    return t;
  }
}
