package dev.tally.cli;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;

/**
 * Run in a JVM of its own by {@link MainTest}: initialises {@link Main} as {@code tally} does, then prints the
 * common pool's parallelism and the name of the thread a default-executor async task ran on; or, given the
 * argument {@code netty-jfr}, whether Netty will emit its Flight Recorder events.
 */
public final class CommonPoolProbe {
  private CommonPoolProbe() {}

  public static void main(String[] args) throws Exception {
    Class.forName(Main.class.getName()); // runs its initialiser, as starting tally does
    if (args.length > 0 && args[0].equals("netty-jfr")) {
      System.out.println("nettyJfr=" + io.netty.util.internal.PlatformDependent.isJfrEnabled());
      return;
    }
    String thread = CompletableFuture.supplyAsync(() -> Thread.currentThread().getName()).get();
    System.out.println("parallelism=" + ForkJoinPool.getCommonPoolParallelism() + " thread=" + thread);
  }
}
