package dev.tally.coordinator.net.fuzz;

import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * How many inputs a fuzz property tries. CI runs each property's own {@code @Property(tries = ...)}, sized
 * to keep the whole suite under a minute on two cores; a longer run sets the system property
 * {@code tally.fuzz.tries} to try that many inputs in every fuzz property instead, and
 * {@code tally.fuzz.seed} to replay one reported seed:
 *
 * <pre>
 * ./mvnw -B -o -q -pl coordinator test -Dtest='dev.tally.coordinator.net.fuzz.*' -Dtally.fuzz.tries=100000
 * </pre>
 *
 * <p>jqwik takes {@code tries} only as a constant in the annotation, so this hook overrides it per run.
 */
public final class FuzzBudget implements AroundPropertyHook {
  /** Overrides every fuzz property's tries, e.g. {@code -Dtally.fuzz.tries=100000}. */
  static final String TRIES_PROPERTY = "tally.fuzz.tries";

  /** Replays one run: the seed jqwik printed with a failure, e.g. {@code -Dtally.fuzz.seed=-1234}. */
  static final String SEED_PROPERTY = "tally.fuzz.seed";

  /** Added on a test class, it reaches every property in it. */
  @Override
  public PropagationMode propagateTo() {
    return PropagationMode.ALL_DESCENDANTS;
  }

  @Override
  public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
    String tries = System.getProperty(TRIES_PROPERTY, "").trim();
    if (!tries.isEmpty()) {
      int n = Integer.parseInt(tries);
      if (n < 1) {
        throw new IllegalArgumentException(TRIES_PROPERTY + " must be at least 1, got " + tries);
      }
      context.attributes().setTries(n);
    }
    String seed = System.getProperty(SEED_PROPERTY, "").trim();
    if (!seed.isEmpty()) {
      context.attributes().setSeed(seed);
    }
    return property.execute();
  }
}
