package build

import (
	"math"
	"slices"
	"strings"

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
