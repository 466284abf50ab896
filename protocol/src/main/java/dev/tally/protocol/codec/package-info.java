/**
 * The frame codec: how Tally's protobuf {@link dev.tally.protocol.Envelope}s travel over a TCP byte
 * stream (a 4-byte big-endian length, then the Envelope), and what is refused. Both the coordinator's
 * worker server and the worker's session install it with {@link dev.tally.protocol.codec.FrameCodec#install}.
 */
package dev.tally.protocol.codec;
