package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.detect.LocalHealth;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Heartbeat;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The connection cores of one worker port under a starved machine, in virtual time: their {@link
 * LocalHealth} (ticked as {@code WorkerServer} ticks it) keeps live workers from being reaped while the
 * observer is frozen in bursts, yet a worker that truly dies is still convicted, within the bound.
 *
 * <p>The scenario ({@link #run}): {@value #WORKERS} workers heartbeat every 100 ms to a port whose fixed
 * detector convicts after 1 s of silence ({@link CoreWorld}). Every 3 s the whole machine stalls for
 * {@value #STALL_MILLIS} ms: no worker's frame gets through (the workers are starved, or the observer's
 * loop does not read), and the observer's own timers, the liveness checks and the health tick, run every
 * 250 ms instead of every 100 ms (late, but not so late that a check skips its judgement).
 */
class LocalHealthConnectionTest {
  private static final int WORKERS = 6;
  private static final long STEP_MILLIS = 10;
  private static final long STALL_EVERY_MILLIS = 3_000;
  private static final long STALL_MILLIS = 1_400;
  private static final long STARVED_TIMER_MILLIS = 250;

  /** When each worker's session was closed (ms since the start), or -1 if it never was. */
  private record Outcome(long[] closedAtMillis, double highestMultiplier) {
    long closed() {
      return java.util.Arrays.stream(closedAtMillis).filter(t -> t >= 0).count();
    }
  }

  /**
   * Runs the scenario for {@code durationMillis}, with stalls if {@code stalls}; worker {@code dead} (an
   * index, or -1 for none) stops sending for good at {@code deathAtMillis}; {@code lagMillis[i]}, if
   * above 0, is what worker i reports as its own scheduling lag in each heartbeat.
   */
  private static Outcome run(CoreWorld world, long durationMillis, boolean stalls, int dead, long deathAtMillis,
      long[] lagMillis) {
    return run(world, durationMillis, stalls, dead, deathAtMillis, lagMillis, 0);
  }

  /**
   * As above, with {@code strangers} connections open all along that never say anything (each one reaped
   * is opened again at once, as someone who reaches the port could).
   */
  private static Outcome run(CoreWorld world, long durationMillis, boolean stalls, int dead, long deathAtMillis,
      long[] lagMillis, int strangers) {
    LocalHealth health = world.context.health();
    List<CoreWorld.FakeConnection> silent = new ArrayList<>();
    for (int i = 0; i < strangers; i++) {
      silent.add(world.connect());
    }
    List<CoreWorld.FakeConnection> cs = new ArrayList<>();
    for (int i = 0; i < WORKERS; i++) {
      cs.add(world.joined("w" + i, 1));
    }
    long[] closedAt = new long[WORKERS];
    java.util.Arrays.fill(closedAt, -1);
    long[] nextBeat = new long[WORKERS];
    long nextTimers = 0;
    double highest = 1;
    long seq = 0;
    health.tick(world.now());
    for (long t = 0; t <= durationMillis; t += STEP_MILLIS) {
      boolean stalled = stalls && t % STALL_EVERY_MILLIS >= 1_000 && t % STALL_EVERY_MILLIS < 1_000 + STALL_MILLIS;
      for (int i = 0; i < WORKERS; i++) {
        boolean alive = i != dead || t < deathAtMillis;
        if (alive && !stalled && t >= nextBeat[i] && !cs.get(i).closed) {
          cs.get(i).receive(Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(++seq)
              .setSchedulingLagMillis(lagMillis == null ? 0 : (int) lagMillis[i])).build());
          nextBeat[i] = t + CoreWorld.INTERVAL_MILLIS;
        }
      }
      if (t >= nextTimers) {
        health.tick(world.now());
        highest = Math.max(highest, health.multiplier());
        for (int i = 0; i < WORKERS; i++) {
          if (!cs.get(i).closed) {
            cs.get(i).check();
            if (cs.get(i).closed) {
              closedAt[i] = t;
            }
          }
        }
        for (int i = 0; i < silent.size(); i++) {
          silent.get(i).check();
          if (silent.get(i).closed) {
            silent.get(i).end();
            silent.set(i, world.connect());
          }
        }
        nextTimers = t + (stalled ? STARVED_TIMER_MILLIS : CoreWorld.CHECK_MILLIS);
      }
      world.advanceMillis(STEP_MILLIS);
    }
    return new Outcome(closedAt, highest);
  }

  private static CoreWorld world(LocalHealth.Config health) {
    return new CoreWorld(WorkerServer.Settings.builder().localHealth(health), "store-a");
  }

  @Test
  void withoutLocalHealthAFrozenObserverReapsItsLiveWorkers() {
    Outcome o = run(world(LocalHealth.Config.off()), 10_000, true, -1, 0, null);
    assertThat(o.closed()).isEqualTo(WORKERS); // the baseline: every live worker is reaped in the first stall
    assertThat(o.closedAtMillis()[0]).isBetween(2_000L, 2_400L);
  }

  @Test
  void withLocalHealthAFrozenObserverReapsNoLiveWorker() {
    CoreWorld world = world(LocalHealth.Config.defaults());
    Outcome o = run(world, 30_000, true, -1, 0, null);
    assertThat(o.closed()).isZero();
    assertThat(o.highestMultiplier()).isGreaterThan(1);
    assertThat(world.context.health().snapshot().lateTicks()).isPositive();
    assertThat(world.context.health().snapshot().correlatedTicks()).isPositive();
  }

  @Test
  void aWorkerThatDiesWhileTheObserverIsStarvedIsStillConvictedWithinTheBound() {
    long deathAt = 10_000;
    Outcome o = run(world(LocalHealth.Config.defaults()), 25_000, true, WORKERS - 1, deathAt, null);
    // The stretched window, the observer's own lag (its timers ran 150 ms late) and one late check.
    long bound = CoreWorld.WINDOW_MILLIS * (1 + LocalHealth.DEFAULT_MAX_SCORE)
        + (STARVED_TIMER_MILLIS - CoreWorld.CHECK_MILLIS) + STARVED_TIMER_MILLIS;
    assertThat(o.closedAtMillis()[WORKERS - 1] - deathAt).isBetween(CoreWorld.WINDOW_MILLIS - CoreWorld.INTERVAL_MILLIS, bound);
    assertThat(o.closed()).isEqualTo(1);
  }

  @Test
  void onAHealthyMachineOneDeadWorkerIsConvictedOnItsDetectorsOwnTime() {
    long deathAt = 5_000;
    Outcome o = run(world(LocalHealth.Config.defaults()), 8_000, false, 2, deathAt, null);
    assertThat(o.highestMultiplier()).isEqualTo(1);
    // Its last heartbeat went out up to one interval before it died; the reaper looks every check period.
    assertThat(o.closedAtMillis()[2] - deathAt)
        .isBetween(CoreWorld.WINDOW_MILLIS - CoreWorld.INTERVAL_MILLIS, CoreWorld.WINDOW_MILLIS + CoreWorld.CHECK_MILLIS);
    assertThat(o.closed()).isEqualTo(1);
  }

  @Test
  void connectionsThatNeverSayHelloDoNotStretchAnyConviction() {
    // Twenty strangers hold silent connections open (more than three times the fleet), replaced as they are
    // reaped: they have proven nothing, so they are no sign that this machine is starved.
    long deathAt = 5_000;
    Outcome o = run(world(LocalHealth.Config.defaults()), 8_000, false, 2, deathAt, null, 20);
    assertThat(o.highestMultiplier()).isEqualTo(1);
    assertThat(o.closedAtMillis()[2] - deathAt)
        .isBetween(CoreWorld.WINDOW_MILLIS - CoreWorld.INTERVAL_MILLIS, CoreWorld.WINDOW_MILLIS + CoreWorld.CHECK_MILLIS);
    assertThat(o.closed()).isEqualTo(1);
  }

  @Test
  void aWorkerThatReportsLagIsForgivenThatMuchSilence() {
    // One worker dies at 5 s; it had reported 800 ms of scheduling lag in every heartbeat. Alone, its
    // silence does not stretch anyone's judgement, but its own allowance does: about 1 s + 0.8 s.
    long deathAt = 5_000;
    long[] lag = new long[WORKERS];
    lag[2] = 800;
    Outcome o = run(world(LocalHealth.Config.defaults()), 8_000, false, 2, deathAt, lag);
    assertThat(o.closedAtMillis()[2] - deathAt).isBetween(1_600L, 1_900L);
    Outcome off = run(world(LocalHealth.Config.off()), 8_000, false, 2, deathAt, lag);
    assertThat(off.closedAtMillis()[2] - deathAt).isLessThan(1_300L); // off: the report is ignored
  }
}
