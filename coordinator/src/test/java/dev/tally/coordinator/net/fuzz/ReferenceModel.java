package dev.tally.coordinator.net.fuzz;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Result;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * What the coordinator must do with one connection's bytes, worked out independently of the code under
 * test, from the wire format in {@code tally.proto} and the conversation rules in ConnectionCore's
 * class doc. The fuzz properties compare the real server with this, event for event.
 *
 * <p>The model reads the whole byte stream a peer sent, in order: frames up to the first refused one are
 * handled; the refusal (or the first frame the conversation does not allow) ends the session; a trailing
 * incomplete frame is never handled, and the end of the stream ends the session as "closed by peer".
 *
 * <p>The limits below mirror ConnectionCore's constants; if they change there, a
 * property fails here and names the frame that disagrees.
 */
final class ReferenceModel {
  /** WorkerServer.MAX_WORKER_SLOTS, written out: the model does not take its limits from the code it checks. */
  static final int MAX_SLOTS = 4_096;
  /** ConnectionCore.MAX_ID_CHARS. */
  static final int MAX_ID_CHARS = 256;
  /** ConnectionCore.MAX_QUOTED_REASON_CHARS: how much of a worker's Goodbye reason the lost reason quotes. */
  static final int MAX_QUOTED_REASON_CHARS = 200;

  /** JournalEntry.MAX_DIGEST_CHARS and MAX_RESPONSE_BYTES (core), written out. */
  static final int MAX_DIGEST_CHARS = 128;
  static final int MAX_RESPONSE_BYTES = 1 << 20;

  private ReferenceModel() {}

  /** A journal entry's rules: a digest of 1..128 lower-case hex digits, a response of at most 1 MiB in UTF-8. */
  static boolean acceptable(dev.tally.protocol.JournalEntry j) {
    String d = j.getRequestDigest();
    return !d.isEmpty() && d.length() <= MAX_DIGEST_CHARS && d.chars().allMatch(c -> c >= '0' && c <= '9' || c >= 'a' && c <= 'f')
        && j.getResponse().getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= MAX_RESPONSE_BYTES;
  }

  /** One decoded item of a byte stream: a frame's Envelope, or the refusal that ends the stream. */
  sealed interface Item {
    record Decoded(Envelope envelope) implements Item {}

    /** {@code tooLong} for a length above the limit (refused on the prefix alone). */
    record Refused(boolean tooLong, long length, String why) implements Item {}
  }

  /**
   * Splits {@code stream} into frames the way the frame decoder must: a 4-byte big-endian length, then that
   * many bytes holding an Envelope with a body. Stops at the first refusal; a trailing partial frame is
   * dropped.
   */
  static List<Item> decode(byte[] stream, int maxFrameBytes) {
    List<Item> items = new ArrayList<>();
    int at = 0;
    while (stream.length - at >= 4) {
      long length = ((stream[at] & 0xFFL) << 24) | ((stream[at + 1] & 0xFFL) << 16)
          | ((stream[at + 2] & 0xFFL) << 8) | (stream[at + 3] & 0xFFL);
      if (length > maxFrameBytes) {
        items.add(new Item.Refused(true, length, "frame length " + length + " above the limit"));
        return items;
      }
      if (stream.length - at - 4 < length) {
        return items; // incomplete: the decoder waits for the rest, which never comes
      }
      Envelope e;
      try {
        e = Envelope.parser().parseFrom(stream, at + 4, (int) length);
      } catch (InvalidProtocolBufferException ex) {
        items.add(new Item.Refused(false, length, "not an Envelope: " + ex.getMessage()));
        return items;
      }
      if (e.getBodyCase() == Envelope.BodyCase.BODY_NOT_SET) {
        items.add(new Item.Refused(false, length, "envelope has no body"));
        return items;
      }
      items.add(new Item.Decoded(e));
      at += 4 + (int) length;
    }
    return items;
  }

  /** The bytes of all steps, concatenated: what the server reads from the peer's socket. */
  static byte[] wire(List<Step> steps) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Step s : steps) {
      out.writeBytes(s.bytes());
    }
    return out.toByteArray();
  }

  /**
   * What the sink must hear from one connection: whether it joined (with which worker id), the reports in
   * order, and why it ended (tested by {@code lostReason}; only meaningful when joined).
   */
  record Expected(boolean joined, String workerId, List<AttemptReport> reports, String lostDescription,
      Predicate<String> lostReason) {
    @Override
    public String toString() {
      return (joined ? "joins as '" + workerId + "', reports " + reports + ", lost: " + lostDescription
          : "never joins, no events");
    }
  }

  /** Runs the conversation rules over the items of one connection that its peer then half-closed. */
  static Expected expect(List<Item> items) {
    String workerId = null;
    List<AttemptReport> reports = new ArrayList<>();
    for (Item item : items) {
      if (item instanceof Item.Refused refused) {
        return end(workerId, reports, "malformed frame: ...", r -> r.startsWith("malformed frame: ")
            && (!refused.tooLong() || r.contains("frame length " + refused.length())));
      }
      Envelope e = ((Item.Decoded) item).envelope();
      if (workerId == null) {
        if (e.getBodyCase() != Envelope.BodyCase.HELLO || !acceptable(e.getHello())) {
          return end(null, reports, "", r -> false); // refused before joining: no event at all
        }
        workerId = e.getHello().getWorkerId();
        continue;
      }
      switch (e.getBodyCase()) {
        case HEARTBEAT -> { }
        case DRAIN -> { } // the worker is shutting down gracefully: no event, its handle takes no new work
        case JOURNAL_ENTRY -> {
          if (!acceptable(e.getJournalEntry())) {
            return end(workerId, reports, "malformed frame: (journal entry)", r -> r.startsWith("malformed frame: "));
          }
          // else handed to the scheduler (the sink); it is not a report
        }
        case RESULT -> {
          AttemptReport report = report(e.getResult());
          if (report == null) {
            return end(workerId, reports, "malformed frame: (result)", r -> r.startsWith("malformed frame: "));
          }
          reports.add(report);
        }
        case GOODBYE -> {
          String reason = e.getGoodbye().getReason();
          String quoted = reason.length() <= MAX_QUOTED_REASON_CHARS ? reason
              : reason.substring(0, MAX_QUOTED_REASON_CHARS) + "...";
          String want = "worker said goodbye: " + quoted;
          return end(workerId, reports, want, want::equals);
        }
        case HELLO -> {
          return end(workerId, reports, "second Hello on a live session",
              "second Hello on a live session"::equals);
        }
        default -> {
          String want = "unexpected " + e.getBodyCase() + " from a worker";
          return end(workerId, reports, want, want::equals);
        }
      }
    }
    return end(workerId, reports, "closed by peer", "closed by peer"::equals);
  }

  private static Expected end(String workerId, List<AttemptReport> reports, String description,
      Predicate<String> reason) {
    return new Expected(workerId != null, workerId, List.copyOf(reports), description, reason);
  }

  /** Hello's rules: a non-empty id, id and name of at most 256 chars and no hidden character, 1..4096 slots (uint32). */
  static boolean acceptable(Hello h) {
    long slots = Integer.toUnsignedLong(h.getSlots());
    return !h.getWorkerId().isEmpty() && h.getWorkerId().length() <= MAX_ID_CHARS
        && h.getName().length() <= MAX_ID_CHARS && slots >= 1 && slots <= MAX_SLOTS
        // Names are printed: none with a character that does not show as itself (the rule's one owner).
        && dev.tally.core.HiddenCharacters.problem(h.getWorkerId()).isEmpty()
        && dev.tally.core.HiddenCharacters.problem(h.getName()).isEmpty();
  }

  /**
   * The report a Result must become, or null if the coordinator must refuse it: no ending, a verdict that
   * is not PASS/FAIL/ERROR, or a duration at or above 2^63 ms. An unknown failure kind is read as
   * EVALUATOR_CRASHED with the raw number in the detail (a failure is retryable whatever its kind).
   */
  static AttemptReport report(Result r) {
    return switch (r.getEndingCase()) {
      case ENDING_NOT_SET -> null;
      case OUTCOME -> {
        dev.tally.protocol.Outcome o = r.getOutcome();
        Verdict v = switch (o.getVerdictValue()) {
          case 1 -> Verdict.PASS;
          case 2 -> Verdict.FAIL;
          case 3 -> Verdict.ERROR;
          default -> null;
        };
        // Malformed, as the protocol says: no verdict, a duration beyond 2^63-1 ms, a score that is not a
        // finite number, fields that are not a JSON object's text.
        boolean badFields = o.hasFieldsJson()
            && !(o.getFieldsJson().strip().startsWith("{") && o.getFieldsJson().strip().endsWith("}"));
        if (v == null || o.getDurationMillis() < 0 || r.getQueuedMillis() < 0
            || (o.getHasScore() && !Double.isFinite(o.getScore())) || badFields) {
          yield null;
        }
        yield AttemptReport.of(r.getJobId(), r.getToken(),
            new Outcome(v, o.getHasScore() ? o.getScore() : null, o.getOutputTail(), o.getDurationMillis(),
                o.hasAnswer() ? o.getAnswer() : null, o.hasFieldsJson() ? o.getFieldsJson() : null,
                o.hasExitCode() ? o.getExitCode() : null, o.getStderrTail()))
            .withTiming(r.getQueuedMillis(), o.getDurationMillis());
      }
      case FAILURE -> {
        dev.tally.protocol.InfraFailure f = r.getFailure();
        if (f.getDurationMillis() < 0 || r.getQueuedMillis() < 0) {
          yield null; // beyond 2^63-1 ms: refused as malformed
        }
        InfraFailure failure = switch (f.getKindValue()) {
          case 1 -> new InfraFailure(InfraFailure.Kind.TIMEOUT, f.getDetail());
          case 2 -> new InfraFailure(InfraFailure.Kind.SIGNALED, f.getDetail());
          case 3 -> new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, f.getDetail());
          case 4 -> new InfraFailure(InfraFailure.Kind.HANDED_BACK, f.getDetail());
          // A rate limit's wait is its own: from 0 to a day (unsigned on the wire; past a day, malformed).
          case 5 -> f.getRetryAfterMillis() >= 0 && f.getRetryAfterMillis() <= 86_400_000L
              ? new InfraFailure(InfraFailure.Kind.RATE_LIMITED, f.getDetail(), f.getRetryAfterMillis()) : null;
          default -> new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED,
              "unknown failure kind " + f.getKindValue() + ": " + f.getDetail());
        };
        if (failure == null) {
          yield null;
        }
        yield AttemptReport.failed(r.getJobId(), r.getToken(), failure).withTiming(r.getQueuedMillis(), f.getDurationMillis());
      }
    };
  }
}
