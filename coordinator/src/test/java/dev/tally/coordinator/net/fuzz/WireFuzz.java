package dev.tally.coordinator.net.fuzz;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.tally.protocol.Abandon;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Drain;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.HeldJob;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import dev.tally.protocol.InfraFailure;
import dev.tally.protocol.Outcome;
import dev.tally.protocol.Result;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import dev.tally.protocol.Welcome;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

/**
 * Generators of what a worker might send the coordinator: garbage bytes, cut and oversized frames, and
 * well-formed Envelopes with the wrong content, and session scripts made of them.
 *
 * <p>Worker ids of generated Hellos come from a small pool ({@link #FUZZ_IDS}) or are odd strings; none can
 * be a well-behaved session's id (those start with {@code good-}), so a fuzzed Hello never supersedes it.
 */
final class WireFuzz {
  /** The frame limit the fuzzed servers and decoders run with: small, so that oversized is cheap to reach. */
  static final int MAX_FRAME_BYTES = 64 * 1024;

  /** Worker ids of generated Hellos, few so that sessions of one id meet (superseding). */
  static final List<String> FUZZ_IDS = List.of("fuzz-a", "fuzz-b");

  private WireFuzz() {}

  // ---- values ----

  /** Any long, with the boundaries (0, 1, -1 = 2^64-1 unsigned, MIN, MAX) often. */
  static Arbitrary<Long> longs() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.longs()),
        Tuple.of(2, Arbitraries.longs().between(0, 1_000)),
        Tuple.of(1, Arbitraries.of(0L, 1L, -1L, Long.MAX_VALUE, Long.MIN_VALUE)));
  }

  /** Short strings of any characters (unpaired surrogates included: protobuf writes them as '?'). */
  static Arbitrary<String> text(int maxLength) {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.strings().alpha().numeric().withChars(" -_.:/").ofMaxLength(maxLength)),
        Tuple.of(1, Arbitraries.strings().ofMaxLength(maxLength)));
  }

  static Arbitrary<byte[]> bytes(int minSize, int maxSize) {
    return Arbitraries.bytes().array(byte[].class).ofMinSize(minSize).ofMaxSize(maxSize);
  }

  // ---- Hellos ----

  /** A Hello the coordinator accepts: a pool id, a short name, 1..8 slots. */
  static Arbitrary<Envelope> validHello() {
    return Combinators.combine(Arbitraries.of(FUZZ_IDS), Arbitraries.integers().between(1, 8), heldJobs())
        .as((id, slots, held) -> Envelope.newBuilder().setHello(Hello.newBuilder()
            .setWorkerId(id).setName(id + "-host").setSlots(slots).setVersion("fuzz").addAllHeld(held)).build());
  }

  /**
   * Any Hello: empty, over-long (257 chars) or odd ids; empty, 10 KiB or odd names; 0, 4096, 4097, 2^31-1,
   * 2^32-1 slots; long held lists; credentials.
   */
  static Arbitrary<Envelope> anyHello() {
    Arbitrary<String> ids = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.of(FUZZ_IDS)),
        Tuple.of(1, Arbitraries.just("")),
        Tuple.of(1, Arbitraries.just("i".repeat(ReferenceModel.MAX_ID_CHARS))),
        Tuple.of(1, Arbitraries.just("i".repeat(ReferenceModel.MAX_ID_CHARS + 1))),
        Tuple.of(1, text(40).map(s -> "fuzz-" + s)));
    Arbitrary<String> names = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.just("fuzz-host")),
        Tuple.of(1, Arbitraries.just("")),
        Tuple.of(1, Arbitraries.just("n".repeat(10 * 1024))),
        Tuple.of(1, text(300)));
    Arbitrary<Integer> slots = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.integers().between(1, 8)),
        Tuple.of(2, Arbitraries.of(0, 4_096, 4_097, Integer.MAX_VALUE, -1, Integer.MIN_VALUE)),
        Tuple.of(1, Arbitraries.integers()));
    return Combinators.combine(ids, names, slots, text(20), text(20), heldJobs())
        .as((id, name, n, version, credentials, held) -> Envelope.newBuilder().setHello(Hello.newBuilder()
            .setWorkerId(id).setName(name).setSlots(n).setVersion(version).setCredentials(credentials)
            .addAllHeld(held)).build());
  }

  static Arbitrary<List<HeldJob>> heldJobs() {
    Arbitrary<HeldJob> one = Combinators.combine(longs(), longs())
        .as((job, token) -> HeldJob.newBuilder().setJobId(job).setToken(token).build());
    return Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.just(List.<HeldJob>of())),
        Tuple.of(1, one.list().ofMaxSize(20)),
        Tuple.of(1, one.list().ofMinSize(500).ofMaxSize(3_000)));
  }

  // ---- traffic a joined worker may send ----

  /** A Result with a known verdict or failure kind and a sane duration: recorded as a report. */
  static Arbitrary<Envelope> validResult() {
    Arbitrary<Outcome> outcomes = Combinators.combine(Arbitraries.integers().between(1, 3),
            Arbitraries.of(false, true), Arbitraries.doubles(), text(200), Arbitraries.longs().between(0, 1L << 40))
        .as((v, hasScore, score, tail, millis) -> Outcome.newBuilder().setVerdictValue(v).setHasScore(hasScore)
            .setScore(score).setOutputTail(tail).setDurationMillis(millis).build());
    Arbitrary<InfraFailure> failures = Combinators.combine(Arbitraries.integers().between(1, 5), text(100),
            Arbitraries.longs().between(0, dev.tally.core.InfraFailure.MAX_RETRY_AFTER_MILLIS))
        .as((k, detail, wait) -> InfraFailure.newBuilder().setKindValue(k).setDetail(detail)
            .setRetryAfterMillis(k == 5 ? wait : 0).build());
    return Combinators.combine(longs(), longs(), Arbitraries.oneOf(outcomes.map(o -> (Object) o),
            failures.map(f -> (Object) f)))
        .as((job, token, ending) -> result(job, token, ending));
  }

  /**
   * Results with wrong content: for a job never assigned and a token from the future (any job id and
   * token: the server cannot tell, and must pass them on), with neither outcome nor failure, an unknown
   * verdict number, an unknown failure kind, a NaN or infinite score, a duration of 2^63 ms or more.
   */
  static Arbitrary<Envelope> anyResult() {
    Arbitrary<Outcome> outcomes = Combinators.combine(
            Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.integers().between(0, 4)),
                Tuple.of(1, Arbitraries.of(-1, 99, Integer.MAX_VALUE, Integer.MIN_VALUE))),
            Arbitraries.of(false, true),
            Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.doubles()),
                Tuple.of(1, Arbitraries.of(Double.NaN, Double.POSITIVE_INFINITY, -0.0, Double.MIN_VALUE))),
            Arbitraries.frequencyOf(Tuple.of(4, text(100)), Tuple.of(1, Arbitraries.just("t".repeat(20_000)))),
            longs())
        .as((v, hasScore, score, tail, millis) -> Outcome.newBuilder().setVerdictValue(v).setHasScore(hasScore)
            .setScore(score).setOutputTail(tail).setDurationMillis(millis).build());
    Arbitrary<InfraFailure> failures = Combinators.combine(
            Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.integers().between(0, 5)),
                Tuple.of(1, Arbitraries.of(-7, 1_000_000))),
            text(100), longs(), longs())
        .as((k, detail, millis, wait) -> InfraFailure.newBuilder().setKindValue(k).setDetail(detail)
            .setDurationMillis(millis).setRetryAfterMillis(wait).build());
    Arbitrary<Object> endings = Arbitraries.frequencyOf(Tuple.of(3, outcomes.map(o -> (Object) o)),
        Tuple.of(2, failures.map(f -> (Object) f)), Tuple.of(1, Arbitraries.just((Object) "none")));
    return Combinators.combine(longs(), longs(), endings).as(WireFuzz::result);
  }

  private static Envelope result(long job, long token, Object ending) {
    Result.Builder r = Result.newBuilder().setJobId(job).setToken(token);
    if (ending instanceof Outcome o) {
      r.setOutcome(o);
    } else if (ending instanceof InfraFailure f) {
      r.setFailure(f);
    }
    return Envelope.newBuilder().setResult(r).build();
  }

  /** Heartbeats, now and then with in_flight lists of thousands of ids (some past the frame limit). */
  static Arbitrary<Envelope> heartbeat() {
    Arbitrary<List<Long>> inFlight = Arbitraries.frequencyOf(
        Tuple.of(6, longs().list().ofMaxSize(5)),
        Tuple.of(1, Arbitraries.longs().list().ofMinSize(1_000).ofMaxSize(9_000)));
    return Combinators.combine(longs(), inFlight)
        .as((seq, ids) -> Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(seq).addAllInFlight(ids))
            .build());
  }

  static Arbitrary<Envelope> goodbye() {
    return Arbitraries.frequencyOf(Tuple.of(4, text(50)), Tuple.of(1, Arbitraries.just("g".repeat(5_000))))
        .map(reason -> Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason(reason)).build());
  }

  /** Messages only the coordinator sends: a worker sending one is refused. */
  static Arbitrary<Envelope> coordinatorOnly() {
    return Arbitraries.oneOf(
        Combinators.combine(longs(), longs(), longs(), text(20), bytes(0, 100))
            .as((job, run, token, caseId, json) -> Envelope.newBuilder().setAssign(Assign.newBuilder().setJobId(job)
                .setRunId(run).setToken(token).setAttempt(1).setCaseId(caseId).setCaseJson(ByteString.copyFrom(json)))
                .build()),
        text(40).map(s -> Envelope.newBuilder().setWelcome(Welcome.newBuilder().setSessionId(s)
            .setHeartbeatIntervalMillis(1_000)).build()),
        longs().map(run -> Envelope.newBuilder().setRunConfig(RunConfig.newBuilder().setRunId(run)
            .setEvaluator("exec").putOptions("cmd", "rm -rf /")).build()),
        Combinators.combine(longs(), longs()).as((job, token) -> Envelope.newBuilder().setResultAck(ResultAck
            .newBuilder().addEntries(AckEntry.newBuilder().setJobId(job).setToken(token)
                .setStatus(AckEntry.Status.RECORDED))).build()),
        longs().map(job -> Envelope.newBuilder().setAbandon(Abandon.newBuilder().setJobId(job).setReason("x"))
            .build()),
        text(20).map(r -> Envelope.newBuilder().setDrain(Drain.newBuilder().setReason(r)).build()));
  }

  /** {@code envelopes} with unknown fields added to the Envelope (a newer worker): they must be ignored. */
  static Arbitrary<Envelope> withUnknownFields(Arbitrary<Envelope> envelopes) {
    Arbitrary<UnknownFieldSet> unknown = Combinators.combine(Arbitraries.integers().between(11, 536_870_911),
            longs(), bytes(0, 40))
        .as((number, varint, blob) -> UnknownFieldSet.newBuilder().addField(number,
            UnknownFieldSet.Field.newBuilder().addVarint(varint).addLengthDelimited(ByteString.copyFrom(blob)).build())
            .build());
    return Combinators.combine(envelopes, unknown)
        .as((e, u) -> e.toBuilder().setUnknownFields(u).build());
  }

  // ---- raw bytes ----

  /** Bytes that are not (only) well-formed frames, each labelled with how it was made. */
  static Arbitrary<Step> raw() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, bytes(1, 200).map(b -> new Step.Raw(b, "random bytes"))),
        Tuple.of(3, truncatedFrame()),
        Tuple.of(2, oversizedPrefix()),
        Tuple.of(3, randomPayloadFrame()),
        Tuple.of(1, Arbitraries.integers().between(1, 15_000).map(WireFuzz::nestedGroups)),
        Tuple.of(1, Arbitraries.integers().between(11, 100_000).map(WireFuzz::onlyUnknownField)),
        Tuple.of(1, Arbitraries.of(
            new Step.Raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII), "an HTTP request"),
            new Step.Raw(new byte[] {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, (byte) 0xFC}, "a TLS ClientHello"),
            new Step.Raw(new byte[] {0, 0, 0, 0}, "a length-0 frame"))));
  }

  /** A well-formed frame cut at a random point: its tail never comes (or later bytes are read as its tail). */
  static Arbitrary<Step> truncatedFrame() {
    Arbitrary<Envelope> any = Arbitraries.oneOf(validResult(), heartbeat(), anyHello(), goodbye());
    return Combinators.combine(any, Arbitraries.doubles().between(0, 1)).as((e, where) -> {
      byte[] whole = Step.frame(e.toByteArray());
      int cut = 1 + (int) (where * (whole.length - 2));
      return new Step.Raw(Arrays.copyOf(whole, cut), "the first " + cut + " of " + whole.length + " bytes of a "
          + e.getBodyCase() + " frame");
    });
  }

  /** A length prefix above the limit, up to 2^32-1, and a few bytes of "body". */
  static Arbitrary<Step> oversizedPrefix() {
    Arbitrary<Long> lengths = Arbitraries.frequencyOf(
        Tuple.of(2, Arbitraries.longs().between(MAX_FRAME_BYTES + 1L, 0xFFFF_FFFFL)),
        Tuple.of(1, Arbitraries.of(MAX_FRAME_BYTES + 1L, 0x7FFF_FFFFL, 0x8000_0000L, 0xFFFF_FFFFL)));
    return Combinators.combine(lengths, bytes(0, 64)).as((length, tail) -> new Step.Raw(
        ByteBuffer.allocate(4 + tail.length).putInt((int) (long) length).put(tail).array(),
        "length prefix " + length + " (limit " + MAX_FRAME_BYTES + ")"));
  }

  /** A frame of a valid length whose payload is random bytes (often not an Envelope; sometimes one). */
  static Arbitrary<Step> randomPayloadFrame() {
    return bytes(0, 300).map(payload -> new Step.Raw(Step.frame(payload), "a frame of " + payload.length
        + " random bytes"));
  }

  /** {@code depth} nested unknown groups (field 15, wire type 3): protobuf's recursion limit, not the stack. */
  static Step nestedGroups(int depth) {
    byte[] body = new byte[depth];
    Arrays.fill(body, (byte) 0x7B);
    return new Step.Raw(Step.frame(body), depth + " nested unknown groups");
  }

  /** An Envelope holding only an unknown varint field: parses, but has no body. */
  static Step onlyUnknownField(int number) {
    byte[] body = UnknownFieldSet.newBuilder()
        .addField(number, UnknownFieldSet.Field.newBuilder().addVarint(1).build()).build().toByteArray();
    return new Step.Raw(Step.frame(body), "an Envelope with only unknown field " + number);
  }

  // ---- steps and scripts ----

  static Arbitrary<Step> frame(Arbitrary<Envelope> envelopes, String label) {
    return envelopes.map(e -> new Step.Frame(e, label + " " + e.getBodyCase()));
  }

  static Arbitrary<Step> pause() {
    return Arbitraries.integers().between(0, 20).map(Step.Pause::new);
  }

  /** Traffic a joined worker may send. */
  static Arbitrary<Step> lawful() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, frame(validResult(), "valid")),
        Tuple.of(2, frame(heartbeat(), "")));
  }

  /** Well-formed frames with the wrong content, or at the wrong time. */
  static Arbitrary<Step> wrong() {
    return Arbitraries.frequencyOf(
        Tuple.of(4, frame(anyResult(), "any")),
        Tuple.of(2, frame(anyHello(), "another")),
        Tuple.of(2, frame(coordinatorOnly(), "worker-sent")),
        Tuple.of(1, frame(goodbye(), "mid-stream")),
        Tuple.of(2, frame(withUnknownFields(Arbitraries.oneOf(validResult(), heartbeat(), anyHello())),
            "unknown fields +")));
  }

  /**
   * A whole session: usually a valid Hello first (so that the rest is judged by a joined session),
   * sometimes any Hello or anything at all, then up to {@code maxSteps} of lawful traffic, wrong messages,
   * raw bytes and pauses, interleaved. {@code rawWeight} tilts it towards garbage.
   */
  static Arbitrary<List<Step>> session(int maxSteps, int rawWeight) {
    Arbitrary<Step> opening = Arbitraries.frequencyOf(
        Tuple.of(8, frame(validHello(), "valid")),
        Tuple.of(2, frame(withUnknownFields(validHello()), "unknown fields + valid")),
        Tuple.of(3, frame(anyHello(), "any")),
        Tuple.of(1, wrong()),
        Tuple.of(1, raw()));
    Arbitrary<Step> rest = Arbitraries.frequencyOf(
        Tuple.of(6, lawful()),
        Tuple.of(3, wrong()),
        Tuple.of(rawWeight, raw()),
        Tuple.of(1, pause()));
    return Combinators.combine(opening, rest.list().ofMaxSize(maxSteps)).as((first, more) -> {
      List<Step> all = new ArrayList<>(1 + more.size());
      all.add(first);
      all.addAll(more);
      return all;
    });
  }
}
