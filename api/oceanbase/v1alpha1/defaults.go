package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults of an OBCluster. The CRD's +kubebuilder:default markers say
// the same (a marker cannot name a constant); TestDefaults checks on a
// real API server that the schema and Default agree.
const (
	// DefaultStorageSize is each observer's volume when spec.storage.size
	// is unset.
	DefaultStorageSize = "1Gi"
	// DefaultClusterID is spec.clusterID when unset.
	DefaultClusterID = 1
	// DefaultZoneReplicas is a zone's replicas when unset.
	DefaultZoneReplicas = 1
)

// Default applies the CRD's defaults in memory, for objects the schema has
// not defaulted (the controller calls it every pass; the webhook with it),
// and the defaults that depend on the object (clusterName, the credential
// Secrets). It never replaces a value that is set.
func Default(c *OBCluster) {
	s := &c.Spec
	if s.ClusterName == "" {
		s.ClusterName = strings.ReplaceAll(c.Name, "-", "_")
	}
	if s.ClusterID == 0 {
		s.ClusterID = DefaultClusterID
	}
	for i := range s.Zones {
		if s.Zones[i].Replicas == 0 {
			s.Zones[i].Replicas = DefaultZoneReplicas
		}
	}
	if s.Storage.Size == nil {
		q := resource.MustParse(DefaultStorageSize)
		s.Storage.Size = &q
	}
	if s.Storage.ReclaimPolicy == "" {
		s.Storage.ReclaimPolicy = "Retain"
	}
	if s.Credentials.Root == "" {
		s.Credentials.Root = c.Name + "-root"
	}
	if s.Credentials.Operator == "" {
		s.Credentials.Operator = c.Name + "-operator"
	}
}

// Tenant defaults, said again by the CRD's markers (see above).
const (
	DefaultCharset          = "utf8mb4"
	DefaultPrimaryZone      = "RANDOM"
	DefaultConnectWhiteList = "%"
)

// DefaultTenant applies an OBTenant's defaults in memory, as Default does
// a cluster's.
func DefaultTenant(t *OBTenant) {
	s := &t.Spec
	if s.TenantName == "" {
		s.TenantName = strings.ReplaceAll(t.Name, "-", "_")
	}
	if s.UnitNum == 0 {
		s.UnitNum = 1
	}
	if s.Unit.MinCPU == nil {
		q := s.Unit.MaxCPU.DeepCopy()
		s.Unit.MinCPU = &q
	}
	if s.PrimaryZone == "" {
		s.PrimaryZone = DefaultPrimaryZone
	}
	if s.Charset == "" {
		s.Charset = DefaultCharset
	}
	if s.ConnectWhiteList == "" {
		s.ConnectWhiteList = DefaultConnectWhiteList
	}
	if s.RootPassword == "" {
		s.RootPassword = t.Name + "-root"
	}
	if s.ReclaimPolicy == "" {
		s.ReclaimPolicy = "Retain"
	}
	if s.Source != nil && s.Source.Restore != nil {
		DefaultRestoreSource(s.Source.Restore)
	}
}

// DefaultRestoreSource applies a restore source's defaults in memory.
func DefaultRestoreSource(r *OBTenantRestoreSource) {
	if r.Role == "" {
		r.Role = RestoreAsPrimary
	}
}

// Defaults of an OBTenantBackupPolicy, as the CRD's schema writes them.
const (
	DefaultRecoveryWindow      = "7d"
	DefaultBackupsKept         = 10
	DefaultPieceSwitchInterval = "1d"
	DefaultArchiveBinding      = "Optional"
)

// DefaultBackupPolicy applies an OBTenantBackupPolicy's defaults in memory.
func DefaultBackupPolicy(p *OBTenantBackupPolicy) {
	s := &p.Spec
	if s.RecoveryWindow == "" {
		s.RecoveryWindow = DefaultRecoveryWindow
	}
	if s.BackupsKept == 0 {
		s.BackupsKept = DefaultBackupsKept
	}
	if s.Archive.PieceSwitchInterval == "" {
		s.Archive.PieceSwitchInterval = DefaultPieceSwitchInterval
	}
	if s.Archive.Binding == "" {
		s.Archive.Binding = DefaultArchiveBinding
	}
}

// DefaultBackup applies an OBTenantBackup's defaults in memory.
func DefaultBackup(b *OBTenantBackup) {
	if b.Spec.Type == "" {
		b.Spec.Type = BackupFull
	}
}
