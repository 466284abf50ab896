/**
 * The security of Tally's listeners, one owner per rule: {@link dev.tally.coordinator.security.Secrets}
 * (where a token comes from: a file or an environment variable, never an option's value), {@link
 * dev.tally.coordinator.security.ListenerSecurity} (the open-port rule: a listener on a non-loopback address
 * needs a token unless {@code --insecure}), {@link dev.tally.coordinator.security.TlsIdentity} (what a valid
 * certificate and key pair is, for the worker port and the HTTP API) and {@link
 * dev.tally.coordinator.security.TlsTrust} (what a client trusts, with hostname verification). The token
 * value type and its constant-time comparison are core's {@link dev.tally.core.security.Secret}.
 */
package dev.tally.coordinator.security;
