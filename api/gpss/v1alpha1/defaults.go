package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// Defaults the CRD applies (its +kubebuilder:default markers) and the
// builders fall back on.
const (
	// DefaultEtcdImage is the managed etcd's image: the upstream etcd,
	// built into an image by images/etcd.
	DefaultEtcdImage = "localhost/gpss-etcd:3.6.8"
	// DefaultEtcdStorageSize is each managed etcd member's volume.
	DefaultEtcdStorageSize = "1Gi"
)

// Default applies the CRD's defaults in memory, for objects the schema has
// not defaulted (the controller calls it every pass; the webhook with it).
// It never replaces a value that is set.
func Default(g *GpssCluster) {
	s := &g.Spec
	if s.Replicas == 0 {
		s.Replicas = 2
	}
	if s.RolloutHaltSeconds == 0 {
		s.RolloutHaltSeconds = 90
	}
	if s.Ports.GRPC == 0 {
		s.Ports.GRPC = 5000
	}
	if s.Ports.Gpfdist == 0 {
		s.Ports.Gpfdist = 8080
	}
	if s.Ports.Cluster == 0 {
		s.Ports.Cluster = 5001
	}
	if s.GpfdistService.Type == "" {
		s.GpfdistService.Type = "ClusterIP"
	}
	if len(s.Etcd.Endpoints) > 0 {
		return
	}
	if s.Etcd.Managed == nil {
		s.Etcd.Managed = &ManagedEtcd{}
	}
	m := s.Etcd.Managed
	if m.Image == "" {
		m.Image = DefaultEtcdImage
	}
	if m.Replicas == 0 {
		m.Replicas = 1
	}
	if m.Storage.Size == nil {
		q := resource.MustParse(DefaultEtcdStorageSize)
		m.Storage.Size = &q
	}
	if m.Storage.ReclaimPolicy == "" {
		m.Storage.ReclaimPolicy = "Retain"
	}
}
