package dev.tally.core.detect;

/**
 * The standard normal distribution computed independently of the detector's logistic approximation: the
 * error function by its Maclaurin series near 0 and by its continued fraction in the tail, both to near
 * double precision. Test-only; slow and exact rather than fast.
 */
final class NormalReference {
  private static final double SQRT_PI = Math.sqrt(Math.PI);

  private NormalReference() {}

  /** P(Y > y) for a standard normal Y: 0.5 erfc(y / sqrt 2). */
  static double upperTail(double y) {
    return y >= 0 ? 0.5 * erfc(y / Math.sqrt(2)) : 1 - 0.5 * erfc(-y / Math.sqrt(2));
  }

  /** P(Y <= y). */
  static double cdf(double y) {
    return 1 - upperTail(y);
  }

  /** The exact φ: -log10 P(Y > y). */
  static double phi(double y) {
    return -Math.log10(upperTail(y));
  }

  /** erfc(x) for x >= 0. */
  static double erfc(double x) {
    if (x < 0) {
      throw new IllegalArgumentException("x must be >= 0, got " + x);
    }
    if (x < 2.5) {
      // erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)); terms peak near e^(x^2) ~ 500, so the
      // cancellation costs under 3 of 16 digits.
      double term = x; // (-1)^n x^(2n+1) / n!
      double sum = x;
      for (int n = 1; n < 200; n++) {
        term *= -x * x / n;
        double add = term / (2 * n + 1);
        sum += add;
        if (Math.abs(add) < 1e-18 * Math.abs(sum)) {
          break;
        }
      }
      return 1 - 2 / SQRT_PI * sum;
    }
    // erfc(x) = e^(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))), evaluated
    // from the back; 500 levels is far more than x >= 2.5 needs.
    double t = x;
    for (int k = 500; k >= 1; k--) {
      t = x + (k / 2.0) / t;
    }
    return Math.exp(-x * x) / (SQRT_PI * t);
  }
}
