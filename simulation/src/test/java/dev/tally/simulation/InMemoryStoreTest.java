package dev.tally.simulation;

import dev.tally.core.store.Store;
import dev.tally.store.StoreContractTest;
import java.nio.file.Path;

/** The shared store contract against {@link InMemoryStore}: the simulation's store keeps SQLite's semantics. */
class InMemoryStoreTest extends StoreContractTest {

  @Override
  protected Store newStore(Path dir) {
    return InMemoryStore.open(dir);
  }

  @Override
  protected AutoCloseable failLeasesIn(Path dir) {
    return InMemoryStore.failLeasesIn(dir);
  }
}
