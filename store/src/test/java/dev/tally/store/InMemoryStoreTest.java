package dev.tally.store;

import dev.tally.core.store.Store;
import dev.tally.core.store.memory.InMemoryStore;
import java.nio.file.Path;

/** The shared store contract against {@link InMemoryStore}: the simulation's store keeps the same semantics as SQLite. */
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
