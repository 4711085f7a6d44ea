package v1alpha1

// Defaults the CRD applies (its +kubebuilder:default markers) and the
// builders fall back on.
const (
	// DefaultEtcdImage is the managed etcd's image: the upstream etcd,
	// built into an image by images/etcd.
	DefaultEtcdImage = "localhost/etcd:3.6.8"
	// DefaultEtcdStorageSize is each managed etcd member's volume.
	DefaultEtcdStorageSize = "1Gi"
)
