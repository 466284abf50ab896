package dev.tally.core.stats;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class EstimateTextTest {

  @Test
  void aPairedDifferenceIsStatedInPointsWithItsIntervalMethodAndTest() {
    // 10 cases all from fail to pass: +100 points, McNemar p = 2 / 2^10.
    String text = EstimateText.difference(Estimates.pairedDifference(0, 0, 10, 0).orElseThrow());
    assertThat(text).startsWith("+100.0 points (95% CI +").contains(", Newcombe paired, n=10; McNemar p=0.0020: beyond the noise)");

    String none = EstimateText.difference(Estimates.pairedDifference(5, 1, 1, 3).orElseThrow());
    assertThat(none).startsWith("+0.0 points (95% CI -").endsWith("McNemar p=1.0000: within the noise)");
    assertThat(EstimateText.difference(null)).isEqualTo("-");
  }

  @Test
  void aMeanSaysWhatItsNCounts() {
    var mean = Estimates.mean(3, 1.5, 1.25).orElseThrow();
    assertThat(EstimateText.mean(mean)).startsWith("0.500 (SE ").endsWith(", Student's t, n=3 scored)");
    assertThat(EstimateText.passAtK(mean)).endsWith(", Student's t, n=3 samples)");
    assertThat(EstimateText.mean(Estimates.mean(1, 0.25, 0.0625).orElseThrow())).isEqualTo("0.250 (n=1 scored)");
    assertThat(EstimateText.passAtK(null)).isEqualTo("-");
  }

  @Test
  void aWrittenEstimateCarriesItsFiguresItsWordsAndItsValueAlone() throws Exception {
    Estimate accuracy = Estimates.proportion(249, 2000).orElseThrow();
    EstimateText.Written w = EstimateText.Written.percent(accuracy);
    assertThat(w.estimate()).isEqualTo(accuracy);
    assertThat(w.text()).isEqualTo(EstimateText.percent(accuracy)).startsWith("12.5% (95% CI ");
    // Rounded here, once: a page rounding 0.1245 itself with toFixed(1) wrote 12.4%.
    assertThat(w.brief()).isEqualTo(EstimateText.percentOnly(accuracy)).isEqualTo("12.5%");
    var mean = Estimates.mean(3, 1.5, 1.25).orElseThrow();
    assertThat(EstimateText.Written.mean(mean).brief()).isEqualTo(EstimateText.meanOnly(mean)).isEqualTo("0.500");
    assertThat(EstimateText.Written.passAtK(mean).text()).endsWith("n=3 samples)");
    assertThat(EstimateText.Written.percent(null)).isNull();
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    var node = json.valueToTree(w);
    assertThat(EstimateText.Written.textOf((com.fasterxml.jackson.databind.JsonNode) node)).isEqualTo(w.text());
    assertThat(EstimateText.Written.textOf(null)).isEqualTo("-");
    assertThat(json.treeToValue((com.fasterxml.jackson.databind.JsonNode) node, EstimateText.Written.class)).isEqualTo(w);
  }
}
