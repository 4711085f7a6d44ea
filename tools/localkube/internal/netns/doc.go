// Package netns creates the cluster's network namespace, where every
// component runs and from which no route leads off the machine, and dials
// into it from the host.
package netns
