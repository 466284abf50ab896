package dev.tally.cli.chaos;

import dev.tally.cli.*;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * How {@code tally chaos} starts its coordinator: {@code ChaosChild --parent-pid=P ARGS...} runs
 * {@code tally ARGS...} (the very same picocli command, in this JVM) and exits when process {@code P} is
 * gone. {@code tally run} has no {@code --parent-pid} of its own (its {@code --workers 0} coordinator would
 * wait for workers forever), so without this a chaos run killed with {@code kill -9} would leave its
 * coordinator behind. Workers need no wrapper: {@code tally worker --parent-pid} does the same.
 */
public final class ChaosChild {
  private ChaosChild() {}

  public static void main(String[] args) {
    if (args.length == 0 || !args[0].startsWith("--parent-pid=")) {
      System.err.println("usage: ChaosChild --parent-pid=PID TALLY-ARGS...");
      System.exit(Main.EXIT_USAGE);
    }
    long parentPid = Long.parseLong(args[0].substring("--parent-pid=".length()));
    ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-chaos-parent-watch");
      t.setDaemon(true);
      return t;
    });
    watchdog.scheduleAtFixedRate(() -> {
      Optional<ProcessHandle> parent = ProcessHandle.of(parentPid);
      if (parent.isEmpty() || !parent.get().isAlive()) {
        System.err.println("tally chaos child: parent process " + parentPid + " is gone; stopping");
        Runtime.getRuntime().halt(3);
      }
    }, 1, 1, TimeUnit.SECONDS);
    System.exit(Main.commandLine().execute(Arrays.copyOfRange(args, 1, args.length)));
  }
}
