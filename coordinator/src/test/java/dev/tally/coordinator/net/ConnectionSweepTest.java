package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.channel.DefaultEventLoop;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ConnectionSweepTest {
  private static final long PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private final DefaultEventLoop loop = new DefaultEventLoop();

  @AfterEach
  void stop() {
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
  }

  /** A connection that counts its sweeps, and throws {@code failure} from each if given one. */
  private static final class Counted implements ConnectionSweep.Swept {
    final AtomicInteger sweeps = new AtomicInteger();
    final AtomicReference<Throwable> closedFor = new AtomicReference<>();
    private final Throwable failure;

    Counted(Throwable failure) {
      this.failure = failure;
    }

    @Override
    public void onSweep() {
      sweeps.incrementAndGet();
      if (failure instanceof Error error) {
        throw error;
      }
      if (failure instanceof RuntimeException runtime) {
        throw runtime;
      }
    }

    @Override
    public void closeAfterSweepFailure(Throwable failure) {
      closedFor.compareAndSet(null, failure);
    }
  }

  private void onLoop(Runnable action) throws Exception {
    loop.submit(action).get(5, TimeUnit.SECONDS);
  }

  @Test
  void aConnectionWhoseSweepThrowsIsClosedAndTheOthersAreStillSwept() throws Exception {
    ConnectionSweep sweep = new ConnectionSweep(loop, PERIOD_NANOS);
    StackOverflowError error = new StackOverflowError("planted");
    Counted failing = new Counted(error);
    Counted healthy = new Counted(null);
    onLoop(() -> {
      sweep.add(failing);
      sweep.add(healthy);
    });

    // Netty cancels a repeating task that throws, for good: a timer still running after the failure
    // keeps sweeping the healthy connection.
    await().atMost(Duration.ofSeconds(5)).until(() -> healthy.sweeps.get() >= 5);
    assertThat(failing.closedFor.get()).isSameAs(error);
    assertThat(sweep.size()).isEqualTo(2); // its channel's end removes it, not the sweep
  }

  @Test
  void theTimerStopsWithTheLoopsLastConnectionAndStartsAgainWithTheNext() throws Exception {
    ConnectionSweep sweep = new ConnectionSweep(loop, PERIOD_NANOS);
    Counted first = new Counted(null);
    onLoop(() -> sweep.add(first));
    await().atMost(Duration.ofSeconds(5)).until(() -> first.sweeps.get() >= 2);
    onLoop(() -> sweep.remove(first));
    assertThat(sweep.size()).isZero();
    int sweptBeforeRemoval = first.sweeps.get();
    // The removal ran on the loop, so no sweep of it was under way; none may start after it.
    Counted second = new Counted(null);
    onLoop(() -> sweep.add(second));
    await().atMost(Duration.ofSeconds(5)).until(() -> second.sweeps.get() >= 3);
    assertThat(first.sweeps.get()).as("a removed connection is not swept").isEqualTo(sweptBeforeRemoval);
    assertThat(sweep.size()).isEqualTo(1);
  }
}
