package dev.tally.core.stats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GroupedEstimatesTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void theGroupIsMetadataFieldThenTopLevelFieldThenMissing() throws Exception {
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"metadata\":{\"subject\":\"law\"},\"subject\":\"x\"}"), "subject"))
        .isEqualTo("law");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"subject\":\"math\"}"), "subject")).isEqualTo("math");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"level\":3}"), "level")).isEqualTo("3");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"subject\":null}"), "subject"))
        .isEqualTo(GroupedEstimates.MISSING);
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\"}"), "subject")).isEqualTo(GroupedEstimates.MISSING);
    // a field path, as a template's placeholder reads it (it grouped every case under (missing) before)
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"meta\":{\"lang\":\"en\"}}"), "meta.lang")).isEqualTo("en");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"metadata\":{\"src\":\"x\"}}"), "metadata.src")).isEqualTo("x");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"metadata\":{\"m\":{\"k\":2}}}"), "m.k")).isEqualTo("2");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"tags\":[\"t0\",\"t1\"]}"), "tags.1")).isEqualTo("t1");
    assertThat(GroupedEstimates.groupOf(JSON.readTree("{\"id\":\"a\",\"metadata\":\"text\",\"subject\":\"s\"}"), "subject")).isEqualTo("s");
  }

  @Test
  void eachGroupGetsItsOwnAccuracyAndMeanScoreFromEstimates() {
    GroupedEstimates g = new GroupedEstimates();
    g.add("math", true, 1.0);
    g.add("math", false, 0.0);
    g.add("math", true, 0.5);
    g.add("math", null, null); // cancelled: counted as a case, not judged
    g.add("law", false, null);
    Map<String, GroupedEstimates.Group> groups = g.groups();
    assertThat(groups).containsOnlyKeys("law", "math");
    GroupedEstimates.Group math = groups.get("math");
    assertThat(math.cases()).isEqualTo(4);
    assertThat(math.accuracy()).contains(Estimates.proportion(2, 3).orElseThrow());
    assertThat(math.meanScore().orElseThrow().value()).isCloseTo(0.5, within(1e-12));
    assertThat(math.meanScore()).contains(Estimates.mean(3, 1.5, 1.25).orElseThrow());
    GroupedEstimates.Group law = groups.get("law");
    assertThat(law.accuracy().orElseThrow().value()).isZero();
    assertThat(law.meanScore()).isEmpty();
    assertThat(g.truncated()).isFalse();
  }

  @Test
  void groupsPastTheLimitAreCountedTogetherAndSaySo() {
    GroupedEstimates g = new GroupedEstimates();
    for (int i = 0; i < GroupedEstimates.MAX_GROUPS + 5; i++) {
      g.add("g" + i, true, null);
    }
    g.add("g0", false, null);
    assertThat(g.truncated()).isTrue();
    assertThat(g.groups()).hasSize(GroupedEstimates.MAX_GROUPS + 1);
    assertThat(g.groups().get(GroupedEstimates.OTHER).cases()).isEqualTo(5);
    assertThat(g.groups().get("g0").cases()).isEqualTo(2);
  }

  @Test
  void aNonFiniteScoreIsRefused() {
    assertThatThrownBy(() -> new GroupedEstimates().add("a", true, Double.NaN))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("group a");
  }
}
