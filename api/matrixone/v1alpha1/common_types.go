package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// DefaultImage is the MatrixOne image every set runs unless its spec says
// otherwise: images/matrixone, built here from MatrixOne's Go module.
const DefaultImage = "localhost/matrixone:1.2.4"

// PodSetSpec is what every MatrixOne set's pods share: the image, the
// resources, the user's configuration and the placement. Embed it inline.
type PodSetSpec struct {
	// image is the MatrixOne image; it must implement the contract of
	// Steward's image (images/matrixone/README.md: mo-service and mo-agent).
	// Default "localhost/matrixone:1.2.4"; can change (the controller
	// restarts the pods in its safe order).
	// +optional
	// +kubebuilder:default="localhost/matrixone:1.2.4"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imagePullPolicy is the pods' image pull policy. Default: unset,
	// Kubernetes' default (IfNotPresent, Always for a :latest tag); can
	// change (restarts the pods).
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// The pods' resources, configuration and placement.
	RoleSpec `json:",inline"`

	// paused stops the controller from acting on the set (its pods keep
	// running). Default false; can change.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// RoleSpec is what every set says of its pods but the image: their
// resources, configuration and placement. A MatrixOneCluster says it per
// role.
type RoleSpec struct {
	// resources are the MatrixOne container's requests and limits. The
	// memory limit sizes MatrixOne's caches and Go's soft memory limit
	// (GOMEMLIMIT, four fifths of it): without one MatrixOne sizes its
	// caches from the node's memory, so set it. Default: none; can change
	// (restarts the pods).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// config is mo-service's TOML configuration for the keys the operator
	// does not own (observability, log levels, timeouts, ...). The
	// operator's keys — identity, addresses, ports, file services and
	// caches, HAKeeper's bootstrap, a CN's work state — are rejected at
	// admission with the reason for each. Default: empty; can change
	// (restarts the pods). At most 64 KiB.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Config string `json:"config,omitempty"`

	// The pods' placement: nodeSelector, affinity (replacing the default,
	// a preferred pod anti-affinity that spreads a set's pods over nodes),
	// tolerations, topologySpreadConstraints and priorityClassName.
	// Default: none but that spreading; can change (restarts the pods).
	commonv1.PodPlacement `json:",inline"`
}

// SharedStorage is where MatrixOne keeps table data (its SHARED file
// service) and, when enabled, its metrics and logs (ETL): one location that
// every pod of a cluster reaches. Exactly one of fileSystem, s3 and
// bucketClaim is set (bucketClaimTemplate goes with bucketClaim); it
// cannot change.
//
// +kubebuilder:validation:XValidation:rule="(has(self.fileSystem) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.bucketClaim) ? 1 : 0) == 1",message="set exactly one of fileSystem, s3 and bucketClaim"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sharedStorage is immutable: the data lives there"
// +kubebuilder:validation:XValidation:rule="!has(self.bucketClaimTemplate) || has(self.bucketClaim)",message="bucketClaimTemplate is the spec of the BucketClaim that bucketClaim names: set bucketClaim",fieldPath=.bucketClaimTemplate
type SharedStorage struct {
	// fileSystem is a ReadWriteMany volume claim, mounted by every pod at
	// /var/lib/matrixone-shared (for example a volume on one node, or a
	// network filesystem). MatrixOne writes each object once under a unique
	// name, so its processes can share one POSIX filesystem. Default:
	// none (then s3 or bucketClaim is set); immutable.
	// +optional
	FileSystem *FileSystemStorage `json:"fileSystem,omitempty"`

	// s3 is an S3-compatible object store. Default: none (then fileSystem
	// or bucketClaim is set); immutable.
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`

	// bucketClaim names a BucketClaim in the set's namespace: its location
	// (spec.s3) is the shared storage, rendered as s3 would be. The claim
	// binds to the first LogSet that names it, for life; the LogSet and
	// the sets of its cluster wait until it is bound to this LogSet, and a
	// LogSet naming a claim bound to another says so in its Ready
	// condition and never starts. Default: none (then fileSystem or s3 is
	// set); immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	BucketClaim string `json:"bucketClaim,omitempty"`

	// bucketClaimTemplate is the spec of the BucketClaim the LogSet makes
	// when none has the name bucketClaim, before its stores start. It has
	// no owner and binds to the LogSet as any claim does; its own
	// reclaimPolicy decides what becomes of it once the LogSet is gone:
	// Delete empties its prefix and deletes it, Retain (the default) keeps
	// it Released with its objects, and a LogSet re-created under the name
	// binds it again and finds its data. A claim of that name that exists
	// is used as it is, whatever the template says. Refused at admission
	// when the claim it would make overlaps another. Default: unset, and
	// the claim is the user's to make. Requires bucketClaim; immutable.
	// +optional
	BucketClaimTemplate *BucketClaimSpec `json:"bucketClaimTemplate,omitempty"`
}

// FileSystemStorage is a shared filesystem claim.
type FileSystemStorage struct {
	// claimName is a PersistentVolumeClaim in the set's namespace, with
	// access mode ReadWriteMany. The sets wait for it to exist. Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// size is the size of the claim Steward makes when none has claimName:
	// the LogSet creates it (ReadWriteMany, this size, storageClassName)
	// before its stores, with no owner, and deletes it with its stores'
	// volumes only under storage.reclaimPolicy Delete. Default: unset, and
	// the claim is the user's, never touched. Immutable.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName is the class of the claim Steward makes. Default:
	// the cluster's default class. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// S3Storage is a location in an S3-compatible object store.
type S3Storage struct {
	// endpoint is the store's URL, for example "https://minio.storage:9000".
	// Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Endpoint string `json:"endpoint"`

	// bucket is the bucket. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`

	// keyPrefix is the path under the bucket; data and etl go below it.
	// Default: the bucket's root; immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	KeyPrefix string `json:"keyPrefix,omitempty"`

	// region is the bucket's region. Required: without one MatrixOne asks
	// AWS's public endpoint for it at start. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region"`

	// credentialsSecret names a Secret in the set's (or the BucketClaim's)
	// namespace with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
	// given to mo-service as environment variables (never written into
	// its configuration), where the AWS SDK's credential chain takes them
	// first, before it would ask anything else. Default: none (the pod's
	// own identity, if the store accepts it); immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// pathStyle addresses the bucket in the URL's path
	// (http://host/bucket/key) instead of in the host name
	// (http://bucket.host/key). Stores inside a cluster need it (versitygw,
	// MinIO, Ceph's RGW): no DNS name resolves bucket.host there. AWS S3
	// and Alibaba OSS take either. MatrixOne has no path-style setting of
	// its own: Steward sets its is-minio, which makes it address the
	// endpoint exactly as given, bucket in the path. Default false;
	// immutable.
	// +optional
	PathStyle bool `json:"pathStyle,omitempty"`

	// caSecret is a key of a Secret in the set's (or the BucketClaim's)
	// namespace holding PEM certificates of the CAs the endpoint's
	// certificate chains to, for an https endpoint signed by a private CA.
	// It is mounted read-only into every MatrixOne pod and listed in
	// MatrixOne's cert-files; the pods do not start until the Secret
	// exists. MatrixOne 1.2.4 then connects
	// without verifying the endpoint's certificate (it turns verification
	// off whenever cert-files are set): Steward's own client verifies it.
	// Default: none (the image's system CAs, verified); immutable.
	// +optional
	CASecret *S3CASecret `json:"caSecret,omitempty"`
}

// DefaultCAKey is the key of an S3 CA Secret unless caSecret.key says.
const DefaultCAKey = "ca.crt"

// S3CASecret is a key of a Secret holding PEM CA certificates.
type S3CASecret struct {
	// name is the Secret, in the set's namespace. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key is the Secret's key holding the certificates. Default "ca.crt";
	// immutable.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// StoreState is whether a store serves: its pod's readiness, then how
// HAKeeper sees it.
// +kubebuilder:validation:Enum=Up;Down;Unknown
type StoreState string

// Store states.
const (
	// StoreUp: the store's pod is ready and HAKeeper hears from the store.
	StoreUp StoreState = "Up"
	// StoreDown: the store's pod is gone or not ready (HAKeeper would go on
	// counting the store up until its heartbeat timeout, minutes), or
	// HAKeeper has not heard from the store within that timeout.
	StoreDown StoreState = "Down"
	// StoreUnknown: HAKeeper does not know the store (not registered yet),
	// or no view of HAKeeper could be read.
	StoreUnknown StoreState = "Unknown"
)

// PodSetter is every MatrixOne set: the kinds whose spec embeds
// PodSetSpec (LogSet, TNSet, CNSet, ProxySet).
//
// +kubebuilder:object:generate=false
type PodSetter interface {
	PodSet() *PodSetSpec
}

// PodSet returns the set's pods' spec (PodSetter).
func (l *LogSet) PodSet() *PodSetSpec { return &l.Spec.PodSetSpec }

// PodSet returns the set's pods' spec (PodSetter).
func (s *TNSet) PodSet() *PodSetSpec { return &s.Spec.PodSetSpec }

// PodSet returns the set's pods' spec (PodSetter).
func (s *CNSet) PodSet() *PodSetSpec { return &s.Spec.PodSetSpec }

// PodSet returns the set's pods' spec (PodSetter).
func (s *ProxySet) PodSet() *PodSetSpec { return &s.Spec.PodSetSpec }
