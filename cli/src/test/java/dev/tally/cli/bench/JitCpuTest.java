package dev.tally.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** {@link JitCpu} reads this very JVM's threads from /proc. */
class JitCpuTest {

  @Test
  @EnabledOnOs(OS.LINUX)
  void readsThisJvmsCompilerThreadsAsAShareOfItsCpu() {
    long me = ProcessHandle.current().pid();
    JitCpu.Sample before = JitCpu.sample(List.of(me));
    long sum = 0;
    long until = System.nanoTime() + 300_000_000L; // enough CPU for this process's tick counts to move
    while (System.nanoTime() - until < 0) {
      sum += Long.toString(sum).hashCode();
    }
    JitCpu.Sample after = JitCpu.sample(List.of(me));
    assertThat(sum).isNotZero();
    assertThat(before.known()).isTrue();
    assertThat(after.totalTicks()).isGreaterThan(before.totalTicks());
    assertThat(after.compilerTicks()).isBetween(0L, after.totalTicks());
    assertThat(after.shareSince(before)).isBetween(0.0, 1.0);
  }

  @Test
  void aProcessThatCannotBeReadMakesTheSampleUnknown() {
    JitCpu.Sample s = JitCpu.sample(List.of(Long.MAX_VALUE));
    assertThat(s.known()).isFalse();
    assertThat(s.shareSince(s)).isEqualTo(-1.0);
  }
}
