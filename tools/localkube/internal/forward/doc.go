// Package forward relays TCP connections from a host loopback address to an
// address inside the cluster's network namespace, so the host reaches the
// API server without any route or interface joining the two namespaces.
package forward
