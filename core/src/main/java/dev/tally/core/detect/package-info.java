/**
 * Failure detection: turning a connection's silence into graded suspicion. Detectors are fed the arrival
 * time of every frame and read no clock of their own.
 */
package dev.tally.core.detect;
