// Package kubectlsteward is the kubectl plugin "kubectl steward": a view of
// every Steward object (system, Ready and why not, the running flow and
// its step), the verbs a user would otherwise type as patches (pause,
// resume, rescue a flow), the backup and restore objects a user would
// otherwise write by hand (backup, restore), and the leading operator
// replica's log. It reads and writes the API server only, as the
// user's kubeconfig allows; it never talks to a data system.
package kubectlsteward
