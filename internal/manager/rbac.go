package manager

// Events. The manager records Events through both APIs: leader election still
// uses core/v1 Events, while controllers get events.k8s.io/v1 recorders from
// the manager. Controllers record Events next to the objects they manage, so
// this is cluster-wide.
//
// Leader election's Lease is deliberately not granted here: a ClusterRole on
// leases would let Steward rewrite every Lease in the cluster (including the
// control plane's own leader locks and node heartbeats). The Lease is granted
// by a Role in Steward's namespace, in the chart's templates/rbac.yaml.
//
// The secure metrics endpoint asks the API server who a scraper is
// (TokenReview) and whether it may read /metrics (SubjectAccessReview).
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
