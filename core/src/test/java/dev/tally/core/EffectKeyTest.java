package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class EffectKeyTest {
  @Test
  void isTheSameForOneCaseOfOneRunWhateverTheAttempt() {
    // Nothing about the attempt (worker, token, attempt number) goes in: every attempt computes this.
    assertThat(EffectKey.of("store-1", 7, "case-a")).isEqualTo(EffectKey.of("store-1", 7, "case-a"));
  }

  @Test
  void hasThePrefixAnd32HexCharacters() {
    assertThat(EffectKey.of("s", 1, "c")).matches("tally-[0-9a-f]{32}");
  }

  @Test
  void differsForEveryOtherCaseRunAndStore() {
    Set<String> keys = new HashSet<>();
    for (String store : new String[] {"", "store-1", "store-2"}) {
      for (long run = 1; run <= 20; run++) {
        for (int c = 0; c < 50; c++) {
          keys.add(EffectKey.of(store, run, "case-" + c));
        }
      }
    }
    assertThat(keys).hasSize(3 * 20 * 50);
  }

  @Test
  void partsCannotBeShiftedIntoOneAnother() {
    // Length prefixes: the same characters split differently between store and case give other keys.
    assertThat(EffectKey.of("ab", 1, "c")).isNotEqualTo(EffectKey.of("a", 1, "bc"));
    assertThat(EffectKey.of("", 1, "")).isNotEqualTo(EffectKey.of("", 0, ""));
  }

  /**
   * The layout is pinned: a receiver's ledger holds keys of runs resumed after an upgrade, so the key of a
   * case must never drift. The value was computed by an independent implementation of the documented
   * layout (Python's hashlib), not by this class.
   */
  @Test
  void isPinnedToTheDocumentedLayout() {
    assertThat(EffectKey.of("store-1", 7, "case-a")).isEqualTo("tally-7e1325cca62f8a4931598c6332e2ca76");
  }
}
