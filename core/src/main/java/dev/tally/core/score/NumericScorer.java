package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.text.Normalizer;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code numeric}: the last number in the answer equals the target within a tolerance. Numbers are read and
 * compared as exact decimals ({@link BigDecimal}), so a tolerance holds exactly at its boundary as written:
 * with {@code abs=0.1}, 1.0 against 1.1 passes (in binary floating point the difference is 0.1000...009).
 *
 * <ul>
 *   <li>A number: an optional sign (a {@code -}, {@code +} or the minus sign U+2212, not right after a letter
 *       or digit, so "3-4" reads 3 and 4), digits with optional thousands commas ({@code 1,234}), an
 *       optional fraction, an optional exponent of at most three digits ({@code 1.5e-3}). The answer is read
 *       after Unicode NFKC, so full-width digits count. Decimal commas ("3,5") are not read as such.
 *   <li>The target: the case's {@code target}, a JSON number, a string that is one number in the form
 *       above, or a list of them (any one is right).
 *   <li>{@code abs=X}: passes when {@code |answer - target| <= X}. {@code rel=X}: passes when {@code
 *       |answer - target| <= X · |target|}. Both given: either suffices, and the explanation says which
 *       held. Neither: the numbers must be equal in value (1.50 equals 1.5).
 * </ul>
 *
 * <p>Thread-safety: immutable.
 */
final class NumericScorer implements Scorer {
  static final String KIND = "numeric";
  static final String ABS = "abs";
  static final String REL = "rel";

  private static final String NUMBER_TEXT =
      "(?:(?<![\\p{L}\\p{N}])[-+\u2212])?(?:\\d{1,3}(?:,\\d{3})+(?!\\d)|\\d+)?(?:\\.\\d+)?(?:(?<=\\d)[eE][-+]?\\d+)?";

  /**
   * The largest exponent of a number read ({@code 1e999}): beyond it a number is not compared, since exact
   * decimal arithmetic on it would spell out as many digits (a billion for {@code 1e999999999}). A double
   * ends near 1e308.
   */
  static final int MAX_EXPONENT = 999;
  private static final Pattern NUMBER = Pattern.compile(NUMBER_TEXT);
  private static final Pattern WHOLE_NUMBER = Pattern.compile("\\s*(" + NUMBER_TEXT + ")\\s*");

  private final String name;
  private final BigDecimal abs;
  private final BigDecimal rel;

  private NumericScorer(String name, BigDecimal abs, BigDecimal rel) {
    this.name = name;
    this.abs = abs;
    this.rel = rel;
  }

  static Scorer of(Scorers.Context c) {
    return new NumericScorer(c.name(), tolerance(c, ABS), tolerance(c, REL));
  }

  private static BigDecimal tolerance(Scorers.Context c, String key) {
    String text = c.value(key);
    if (text == null) {
      return null;
    }
    BigDecimal t;
    try {
      t = new BigDecimal(text.strip());
    } catch (NumberFormatException e) {
      throw c.error(key + "=" + text + " is not a number");
    }
    if (t.signum() < 0) {
      throw c.error(key + "=" + text + " is negative; a tolerance is 0 or more");
    }
    if (beyondRange(t)) {
      throw c.error(key + "=" + text + " has an exponent beyond " + MAX_EXPONENT + ", as no number compared may");
    }
    return t;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    List<BigDecimal> targets = targets(caseFields);
    String text = Normalizer.normalize(answer == null ? "" : answer, Normalizer.Form.NFKC);
    Matcher m = NUMBER.matcher(text);
    String last = null;
    while (m.find()) {
      if (containsDigit(m.group())) {
        last = m.group();
      }
    }
    if (last == null) {
      return ScoreResult.fail(null, "no number in the answer");
    }
    BigDecimal value = decimal(last);
    if (value == null) {
      return ScoreResult.fail(Targets.quote(last.length() <= 40 ? last : last.substring(0, 37) + "..."),
          "the answer's last number has an exponent beyond " + MAX_EXPONENT + ": not compared");
    }
    String read = value.toPlainString();
    String closest = null;
    for (BigDecimal target : targets) {
      BigDecimal off = value.subtract(target).abs();
      if (off.signum() == 0) {
        return ScoreResult.pass(read, "equals " + target.toPlainString());
      }
      boolean withinAbs = abs != null && off.compareTo(abs) <= 0;
      boolean withinRel = rel != null && off.compareTo(rel.multiply(target.abs())) <= 0;
      if (withinAbs || withinRel) {
        String which = withinAbs && withinRel
            ? "abs " + abs.toPlainString() + " and rel " + rel.toPlainString()
            : withinAbs ? "abs " + abs.toPlainString() : "rel " + rel.toPlainString();
        return ScoreResult.pass(read, "within " + which + " of " + target.toPlainString() + " (off by " + off.toPlainString() + ")");
      }
      if (closest == null) {
        closest = target.toPlainString() + " (off by " + off.toPlainString() + ")";
      }
    }
    String tolerance = abs == null && rel == null ? "no tolerance"
        : abs != null && rel != null ? "abs " + abs.toPlainString() + " or rel " + rel.toPlainString()
        : abs != null ? "abs " + abs.toPlainString() : "rel " + rel.toPlainString();
    return ScoreResult.fail(read, (targets.size() == 1 ? "not " + closest : "none of the " + targets.size() + " targets")
        + " within " + tolerance);
  }

  private List<BigDecimal> targets(JsonNode caseFields) {
    JsonNode node = Targets.field(KIND, caseFields, Targets.TARGET);
    if (node.isArray()) {
      if (node.isEmpty()) {
        throw new ScoringException(KIND + ": case field \"target\" is an empty list");
      }
      java.util.ArrayList<BigDecimal> out = new java.util.ArrayList<>();
      for (int i = 0; i < node.size(); i++) {
        out.add(target(node.get(i), "target[" + i + "]"));
      }
      return out;
    }
    return List.of(target(node, "target"));
  }

  private static BigDecimal target(JsonNode node, String where) {
    if (node.isNumber()) {
      if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
        throw new ScoringException(KIND + ": case field \"" + where + "\" is a number beyond a double's range"
            + " (about 1.8e308), which JSON readers take as infinity; write it as a string");
      }
      return node.decimalValue();
    }
    if (node.isTextual()) {
      Matcher m = WHOLE_NUMBER.matcher(Normalizer.normalize(node.textValue(), Normalizer.Form.NFKC));
      if (m.matches() && containsDigit(m.group(1))) {
        BigDecimal value = decimal(m.group(1));
        if (value == null) {
          throw new ScoringException(KIND + ": case field \"" + where + "\" has an exponent beyond " + MAX_EXPONENT
              + ": " + Targets.quote(node.textValue()));
        }
        return value;
      }
      throw new ScoringException(KIND + ": case field \"" + where + "\" is not a number: " + Targets.quote(node.textValue()));
    }
    throw new ScoringException(KIND + ": case field \"" + where + "\" must be a number or a string of one; got " + Targets.shape(node));
  }

  private static boolean containsDigit(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        return true;
      }
    }
    return false;
  }

  /** The number {@link #NUMBER} matched, or null if it is beyond the range compared ({@link #beyondRange}). */
  private static BigDecimal decimal(String number) {
    String plain = number.replace(",", "").replace('\u2212', '-');
    if (plain.startsWith("+")) {
      plain = plain.substring(1);
    }
    // "5." is not matched (the fraction needs digits) and ".5" is: BigDecimal reads both forms it is given. It
    // keeps a written exponent as a scale, spelling out no digits; one beyond an int it refuses.
    try {
      BigDecimal value = new BigDecimal(plain);
      return beyondRange(value) ? null : value;
    } catch (NumberFormatException exponentBeyondAnInt) {
      return null;
    }
  }

  /** Whether {@code value}'s exponent in scientific notation is beyond ±{@link #MAX_EXPONENT}. */
  private static boolean beyondRange(BigDecimal value) {
    return value.signum() != 0 && Math.abs((long) value.precision() - value.scale() - 1) > MAX_EXPONENT;
  }
}
