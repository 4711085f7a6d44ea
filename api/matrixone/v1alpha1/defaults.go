package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// DefaultStorageSize is each store's volume unless spec.storage.size says.
const DefaultStorageSize = "1Gi"

// DefaultBackupGatewayImage is the image of the S3 gateway Steward runs over
// a volume claim that holds backups (BackupDestination.volumeClaim):
// versitygw, built by images/versitygw.
const DefaultBackupGatewayImage = "localhost/versitygw:1.8.0"

// DefaultDrainTimeout is a CNSet's spec.drainTimeout unless it says.
const DefaultDrainTimeout = 5 * time.Minute

// DefaultStoreFailureTimeout is a LogSet's spec.storeFailureTimeout unless
// it says: twice HAKeeper's default log-store-timeout, so that HAKeeper has
// given up on the store first.
const DefaultStoreFailureTimeout = 10 * time.Minute

// DefaultLogSet applies the LogSet's defaults in memory, for objects the
// schema has not defaulted (the controller calls it every pass; the webhook
// with it). It never replaces a value that is set.
func DefaultLogSet(l *LogSet) {
	s := &l.Spec
	if s.Replicas == 0 {
		s.Replicas = 3
	}
	if s.ShardReplicas == 0 {
		s.ShardReplicas = min(s.Replicas, 3)
	}
	if s.LogShards == 0 {
		s.LogShards = 1
	}
	if s.StoreFailureTimeout == nil {
		s.StoreFailureTimeout = &metav1.Duration{Duration: DefaultStoreFailureTimeout}
	}
	if s.RootPassword == "" && l.Name != "" {
		s.RootPassword = l.RootPasswordSecret()
	}
	defaultPodSet(&s.PodSetSpec)
	defaultStorage(&s.Storage)
	defaultSharedStorage(&s.SharedStorage)
}

// defaultSharedStorage defaults the key of an S3 CA Secret, and a
// BucketClaim template as the claim it makes would be.
func defaultSharedStorage(s *SharedStorage) {
	if s.S3 != nil {
		defaultS3(s.S3)
	}
	if t := s.BucketClaimTemplate; t != nil {
		defaultBucketClaimSpec(t)
	}
}

// defaultS3 defaults the key of an S3 CA Secret.
func defaultS3(s *S3Storage) {
	if s.CASecret != nil && s.CASecret.Key == "" {
		s.CASecret.Key = DefaultCAKey
	}
}

// DefaultBucketClaim applies the BucketClaim's defaults in memory (see
// DefaultLogSet): the reclaim policy and the CA Secret's key.
func DefaultBucketClaim(b *BucketClaim) { defaultBucketClaimSpec(&b.Spec) }

// defaultBucketClaimSpec defaults a claim's reclaim policy and the key of
// its CA Secret.
func defaultBucketClaimSpec(s *BucketClaimSpec) {
	if s.ReclaimPolicy == "" {
		s.ReclaimPolicy = commonv1.ReclaimRetain
	}
	defaultS3(&s.S3)
}

// DefaultBackupTimeout bounds a BackupJob's BACKUP statement unless its
// spec.timeout says.
const DefaultBackupTimeout = 2 * time.Hour

// DefaultBackupJob applies the BackupJob's defaults in memory (see
// DefaultLogSet): the Backup's deletion policy and the timeout.
func DefaultBackupJob(j *BackupJob) {
	if j.Spec.DeletionPolicy == "" {
		j.Spec.DeletionPolicy = commonv1.ReclaimRetain
	}
	if j.Spec.Timeout == nil {
		j.Spec.Timeout = &metav1.Duration{Duration: DefaultBackupTimeout}
	}
}

// DefaultBackupSchedule applies the BackupSchedule's defaults in memory:
// the timeout.
func DefaultBackupSchedule(s *BackupSchedule) {
	if s.Spec.Timeout == nil {
		s.Spec.Timeout = &metav1.Duration{Duration: DefaultBackupTimeout}
	}
}

// DefaultBackup applies the Backup's defaults in memory: the deletion
// policy and the CA Secret's key.
func DefaultBackup(b *Backup) {
	if b.Spec.DeletionPolicy == "" {
		b.Spec.DeletionPolicy = commonv1.ReclaimRetain
	}
	defaultS3(&b.Spec.Location)
}

// DefaultMatrixOneCluster applies the cluster's own defaults in memory
// (see DefaultLogSet): the image, the log stores and their shards'
// replicas (recorded, so that a change of logService.replicas never
// changes the default shardReplicas, fixed at HAKeeper's bootstrap), the
// S3 CA Secret's key and the roles' volumes, as its schema does; its sets
// default the rest.
func DefaultMatrixOneCluster(c *MatrixOneCluster) {
	if c.Spec.Image == "" {
		c.Spec.Image = DefaultImage
	}
	if l := &c.Spec.LogService; l.Replicas == 0 {
		l.Replicas = 3
	}
	if l := &c.Spec.LogService; l.ShardReplicas == 0 { // from replicas: Go only
		l.ShardReplicas = min(l.Replicas, 3)
	}
	defaultSharedStorage(&c.Spec.SharedStorage)
	defaultStorage(&c.Spec.LogService.Storage)
	defaultStorage(&c.Spec.TN.Storage)
	for i := range c.Spec.CNGroups {
		defaultStorage(&c.Spec.CNGroups[i].Storage)
	}
}

// DefaultTNSet applies the TNSet's defaults in memory (see DefaultLogSet).
func DefaultTNSet(t *TNSet) {
	defaultPodSet(&t.Spec.PodSetSpec)
	defaultStorage(&t.Spec.Storage)
}

// DefaultCNSet applies the CNSet's defaults in memory (see DefaultLogSet).
func DefaultCNSet(c *CNSet) {
	if c.Spec.Replicas == nil {
		one := int32(1)
		c.Spec.Replicas = &one
	}
	if c.Spec.DrainTimeout == nil {
		c.Spec.DrainTimeout = &metav1.Duration{Duration: DefaultDrainTimeout}
	}
	if c.Spec.ProxyEnabled == nil {
		yes := true
		c.Spec.ProxyEnabled = &yes
	}
	defaultPodSet(&c.Spec.PodSetSpec)
	defaultStorage(&c.Spec.Storage)
}

// DefaultProxySet applies the ProxySet's defaults in memory (see
// DefaultLogSet).
func DefaultProxySet(p *ProxySet) {
	if p.Spec.Replicas == 0 {
		p.Spec.Replicas = 1
	}
	if p.Spec.ServiceType == "" {
		p.Spec.ServiceType = "ClusterIP"
	}
	defaultPodSet(&p.Spec.PodSetSpec)
}

func defaultPodSet(s *PodSetSpec) {
	if s.Image == "" {
		s.Image = DefaultImage
	}
}

func defaultStorage(s *commonv1.StorageSpec) {
	if s.Size == nil {
		size := resource.MustParse(DefaultStorageSize)
		s.Size = &size
	}
	if s.ReclaimPolicy == "" {
		s.ReclaimPolicy = commonv1.ReclaimRetain
	}
}
