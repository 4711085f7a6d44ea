// Package workload holds the mechanics of sets of pods that every system
// with members needs: a StatefulSet-shaped [Set] (pods and volume claims by
// ordinal), the claims' reclaim and the departed marker, eviction through
// the PodDisruptionBudget, pod readiness over time, and the pod watch that
// maps a pod back to the object owning its set through the standard
// labels.
//
// It sits beside the framework, not in it: a controller uses it from its
// Observe, its declarative phase and its flow steps. Pure builders import
// internal/framework/standard instead, which has no client.
package workload
