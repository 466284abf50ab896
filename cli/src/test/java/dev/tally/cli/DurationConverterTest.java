package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Durations are read and written back the way people write them. */
class DurationConverterTest {
  private final DurationConverter converter = new DurationConverter();

  @Test
  void writesTheLargestWholeUnitAndReadsItBackUnchanged() {
    assertThat(DurationConverter.text(Duration.ZERO)).isEqualTo("0s");
    assertThat(DurationConverter.text(Duration.ofMillis(500))).isEqualTo("500ms");
    assertThat(DurationConverter.text(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(DurationConverter.text(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(DurationConverter.text(Duration.ofSeconds(90))).isEqualTo("90s");
    assertThat(DurationConverter.text(Duration.ofMinutes(10))).isEqualTo("10m");
    assertThat(DurationConverter.text(Duration.ofHours(2))).isEqualTo("2h");
    assertThat(DurationConverter.text(Duration.ofSeconds(-1))).isEqualTo("-1s");
    for (Duration d : List.of(Duration.ZERO, Duration.ofMillis(1), Duration.ofMillis(61_001), Duration.ofSeconds(59),
        Duration.ofMinutes(61), Duration.ofHours(49), Duration.ofNanos(1500))) {
      assertThat(converter.convert(DurationConverter.text(d))).as("%s", d).isEqualTo(d);
    }
  }

  /** "-5s" was "not a duration" while "0s" was "must be positive" (the new-user trial); PT-5S got through the grammar. */
  @Test
  void aNegativeDurationIsRefusedAsNegativeInEitherSpelling() {
    for (String negative : new String[] {"-5s", " -1ms", "PT-5S", "-PT5S"}) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> converter.convert(negative)).as(negative)
          .isInstanceOf(picocli.CommandLine.TypeConversionException.class).hasMessageContaining("' is negative: a duration is");
    }
    assertThat(converter.convert("PT0S")).isEqualTo(Duration.ZERO);
    assertThat(converter.convert("-PT0S")).as("zero is not negative").isEqualTo(Duration.ZERO);
    assertThat(converter.convert("-PT-5S")).as("minus minus five seconds").isEqualTo(Duration.ofSeconds(5));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> converter.convert("-0s"))
        .isInstanceOf(picocli.CommandLine.TypeConversionException.class).hasMessageContaining("'-0s' is not a duration: use a whole number");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> converter.convert("banana"))
        .isInstanceOf(picocli.CommandLine.TypeConversionException.class)
        .hasMessageContaining("'banana' is not a duration: use a whole number with ms, s, m or h (e.g. 30s; 0 alone is zero),"
            + " or ISO-8601 (PT30S)");
    assertThat(converter.convert("0")).as("zero needs no unit").isEqualTo(Duration.ZERO);
    assertThat(converter.convert(" 0 ")).isEqualTo(Duration.ZERO);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> converter.convert("5")).hasMessageContaining("'5' is not a duration");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> converter.convert("00")).hasMessageContaining("'00' is not a duration");
  }

  @org.junit.jupiter.api.Test
  void aDurationBeyondAYearIsRefusedBeforeItCanOverflowAnything() {
    DurationConverter c = new DurationConverter();
    assertThat(c.convert("8760h")).isEqualTo(java.time.Duration.ofDays(365));
    for (String huge : new String[] {"8761h", "99999999999s", "9999999999999999999999s", "PT99999999999999H"}) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> c.convert(huge)).as(huge)
          .isInstanceOf(picocli.CommandLine.TypeConversionException.class).hasMessageContaining("limit of 365 days");
    }
  }
}
