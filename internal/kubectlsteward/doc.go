// Package kubectlsteward is the kubectl plugin "kubectl steward": a view of
// every Steward object (system, Ready and why not, the running flow and
// its step) and the verbs a user would otherwise type as patches (pause,
// resume, rescue a flow). It reads and writes the API server only, as the
// user's kubeconfig allows; it never talks to a data system.
package kubectlsteward
