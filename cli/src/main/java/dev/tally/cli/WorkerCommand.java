package dev.tally.cli;

import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code tally worker --coordinator HOST:PORT}: a worker process. It connects (and reconnects, with
 * jittered backoff, for as long as it runs), runs the cases it is assigned, and heartbeats. It stops on
 * SIGTERM/SIGINT, or when {@code --parent-pid} disappears.
 */
@Command(name = "worker", mixinStandardHelpOptions = true, description = "Run cases for a coordinator.")
public final class WorkerCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(WorkerCommand.class);

  @Spec CommandSpec spec;

  @Option(names = "--coordinator", required = true, converter = HostPort.Converter.class, description = "The coordinator's worker address, HOST:PORT.")
  HostPort coordinator;

  @Option(names = "--slots", description = "Cases run at once (default: the number of cores).")
  Integer slots;

  @Option(names = "--name", description = "Name shown in results and status (default: HOSTNAME-PID).")
  String name;

  @Option(names = "--parent-pid", hidden = true, description = "Exit when this process is gone (used by tally run for its local workers).")
  Long parentPid;

  @Override
  public Integer call() throws Exception {
    int workerSlots = slots == null ? Runtime.getRuntime().availableProcessors() : slots;
    if (workerSlots < 1 || workerSlots > dev.tally.coordinator.net.WorkerServer.MAX_WORKER_SLOTS) {
      throw new ParameterException(spec.commandLine(), "--slots must be from 1 to "
          + dev.tally.coordinator.net.WorkerServer.MAX_WORKER_SLOTS + " (what a coordinator accepts), got " + workerSlots);
    }
    if (coordinator.port() == 0) {
      throw new ParameterException(spec.commandLine(), "--coordinator needs a port other than 0");
    }
    WorkerSettings.Builder settings = WorkerSettings.builder(coordinator.host(), coordinator.port()).slots(workerSlots);
    if (name != null) {
      settings.name(name);
    }
    WorkerSession session = new WorkerSession(settings.build());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      session.close();
      stopped.countDown();
    }, "tally-worker-stop"));
    ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-parent-watch");
      t.setDaemon(true);
      return t;
    });
    if (parentPid != null) {
      // A worker whose tally run died must not keep reconnecting forever: poll the parent every second.
      watchdog.scheduleAtFixedRate(() -> {
        Optional<ProcessHandle> parent = ProcessHandle.of(parentPid);
        if (parent.isEmpty() || !parent.get().isAlive()) {
          log.warn("parent process {} is gone; stopping", parentPid);
          System.exit(0);
        }
      }, 1, 1, TimeUnit.SECONDS);
    }
    session.start();
    session.awaitTermination();
    stopped.await(10, TimeUnit.SECONDS);
    return 0;
  }

}
