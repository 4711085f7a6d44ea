package build

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// TenantApp is the app.kubernetes.io/name of an OBTenant's children (its
// generated root password Secret); the tenant controller registers with it.
const TenantApp = "obtenant"

// UnitConfigName names a tenant's resource unit config in OceanBase.
func UnitConfigName(t *obv1.OBTenant) string { return t.Spec.TenantName + "_unit" }

// PoolName names a tenant's resource pool in zone.
func PoolName(t *obv1.OBTenant, zone string) string { return t.Spec.TenantName + "_pool_" + zone }

// PoolNames are the tenant's pools of zones, in order.
func PoolNames(t *obv1.OBTenant, zones []string) []string {
	out := make([]string, len(zones))
	for i, z := range zones {
		out[i] = PoolName(t, z)
	}
	return out
}

// TenantZones are the spec's zone names, in order.
func TenantZones(t *obv1.OBTenant) []string {
	out := make([]string, len(t.Spec.Zones))
	for i, z := range t.Spec.Zones {
		out[i] = z.Name
	}
	return out
}

// Locality is a full replica in each of zones, as OceanBase writes it.
func Locality(zones []string) string {
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = "FULL{1}@" + z
	}
	return strings.Join(parts, ", ")
}

// LocalityZones are the zones of a locality ("FULL{1}@z1, FULL{1}@z2"),
// in order.
func LocalityZones(locality string) []string {
	var out []string
	for _, part := range strings.Split(locality, ",") {
		if _, zone, ok := strings.Cut(strings.TrimSpace(part), "@"); ok {
			out = append(out, zone)
		}
	}
	return out
}

// SameZones reports whether locality places replicas in exactly zones,
// in whatever order: OceanBase keeps a locality's zones in its own order.
func SameZones(locality string, zones []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(LocalityZones(locality))), slices.Sorted(slices.Values(zones)))
}

// UnitConfig is the spec's unit config in OceanBase's units: CPUs (to the
// millicore) and bytes. t must be defaulted (minCPU set).
func UnitConfig(t *obv1.OBTenant) obsql.UnitConfig {
	u := t.Spec.Unit
	cpu := func(millis int64) float64 { return math.Round(float64(millis)) / 1000 }
	out := obsql.UnitConfig{MaxCPU: cpu(u.MaxCPU.MilliValue()), MinCPU: cpu(u.MaxCPU.MilliValue()),
		Memory: u.MemorySize.Value()}
	if u.MinCPU != nil {
		out.MinCPU = cpu(u.MinCPU.MilliValue())
	}
	if u.LogDiskSize != nil {
		out.LogDisk = u.LogDiskSize.Value()
	}
	return out
}

// TenantLabels are the labels of a tenant's children.
func TenantLabels(t *obv1.OBTenant, component string) map[string]string {
	return standard.Labels(TenantApp, t.Name, component, PartOf)
}

// TenantPasswordSecret is a tenant's generated root password Secret.
func TenantPasswordSecret(t *obv1.OBTenant, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: t.Spec.RootPassword, Namespace: t.Namespace,
			Labels: TenantLabels(t, ComponentCredentials)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"password": password},
	}
}

// RestoreApp and OperationApp are the app.kubernetes.io/name the restore
// and the operation controllers register with.
const (
	RestoreApp   = "obtenantrestore"
	OperationApp = "obtenantoperation"
)

// ComponentRestore is the component label of a tenant's OBTenantRestore.
const ComponentRestore = "restore"

// TenantRestore is the OBTenantRestore of a tenant whose spec.source.restore
// is set: named as the OBTenant, controlled by it, with its source.
func TenantRestore(t *obv1.OBTenant) *obv1.OBTenantRestore {
	yes := true
	return &obv1.OBTenantRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name, Labels: TenantLabels(t, ComponentRestore),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: obv1.GroupVersion.String(), Kind: "OBTenant", Name: t.Name,
				UID: t.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: obv1.OBTenantRestoreSpec{Tenant: t.Name, Source: *t.Spec.Source.Restore.DeepCopy()},
	}
}

// RestoreSCN is the SCN of a restore point: OceanBase's SCN of a time is
// its nanoseconds since the epoch (TIMESTAMP_TO_SCN); 0 when until is
// unset (as far as the archive reaches).
func RestoreSCN(until *obv1.RestorePoint) (int64, error) {
	switch {
	case until == nil:
		return 0, nil
	case until.SCN > 0:
		return until.SCN, nil
	}
	at, err := time.Parse(time.RFC3339Nano, until.Time)
	if err != nil {
		return 0, fmt.Errorf("until.time %q is not an RFC 3339 time: %w", until.Time, err)
	}
	return at.UnixNano(), nil
}

// StandbyUser is the read-only user of a primary tenant its standbys read
// its log as (OceanBase's documentation names it standbyro too).
const StandbyUser = "standbyro"

// ComponentStandbySource is the component label of a primary's standby
// user Secret.
const ComponentStandbySource = "standby-source"

// StandbySourceSecret is the Secret of a primary tenant's standby user:
// named <primary>-standbyro, generated by its first standby.
func StandbySourceSecret(primary *obv1.OBTenant, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: primary.Name + "-" + StandbyUser, Namespace: primary.Namespace,
			Labels: TenantLabels(primary, ComponentStandbySource)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"password": password},
	}
}

// LogRestoreSource is a standby's LOG_RESTORE_SOURCE: the primary's
// observers' SQL addresses (host:2881), and its standby user.
func LogRestoreSource(hosts []string, primaryTenant, password string) string {
	addrs := make([]string, len(hosts))
	for i, h := range hosts {
		addrs[i] = net.JoinHostPort(h, "2881")
	}
	return "SERVICE=" + strings.Join(addrs, ";") + " USER=" + StandbyUser + "@" + primaryTenant + " PASSWORD=" + password
}
