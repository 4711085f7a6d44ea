// Package kube holds what the cluster benchmarks (bench/zookeeper,
// bench/scale; build tag bench) share: the connection to the cluster
// KUBECONFIG names, a namespace per benchmark that is emptied before it
// goes, the operator's metrics read from its leader through the API
// server's pod proxy and the API server's own, the leader-election
// renewals and the changes of objects counted over a window. Its metrics
// parsing (no build tag) reads the Prometheus text format and subtracts
// scrapes, and estimates a histogram's quantiles from its buckets.
package kube
