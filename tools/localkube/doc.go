// Package localkube is the module root of the local-cluster launcher. The
// launcher itself is cmd/localkube; components/ holds the upstream Kubernetes
// mains it builds; internal/ holds its parts. It is a separate Go module
// because building k8s.io/kubernetes needs a replace line per staging module,
// which must stay out of the operator's go.mod.
package localkube
