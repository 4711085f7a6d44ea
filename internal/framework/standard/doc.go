// Package standard holds what every system's pure builders share and that
// must not pull in controller-runtime: the standard labels of Steward's
// children, content hashes for immutable configuration, and the shared pod
// placement and overrides of api/common applied to a pod template.
//
// It imports only the standard library, Kubernetes' API types and
// api/common, so a builder (a function from spec to objects, tested by
// tables) can import it without a client; the framework builds on it.
package standard
