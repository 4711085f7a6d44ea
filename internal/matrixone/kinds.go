package matrixone

import (
	"time"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// The kinds the store set controller runs, each read as a build.StoreSet.

// NewTNSetController returns the TNSet controller: one TN store, its own
// volume by default.
func NewTNSetController(opts Options) *StoreSetController[*mov1.TNSet] {
	return newStoreSetController(opts, storeKind[*mov1.TNSet]{
		kind: "TNSet", role: build.RoleTN,
		set: func(t *mov1.TNSet, log *mov1.LogSet) build.StoreSet {
			return build.StoreSet{Namespace: t.Namespace, Name: t.Name, Role: build.RoleTN, Replicas: 1,
				Pods: &t.Spec.PodSetSpec, Storage: &t.Spec.Storage, Log: log}
		},
		logSet:   func(t *mov1.TNSet) string { return t.Spec.LogSet },
		status:   func(t *mov1.TNSet) *mov1.StoreSetStatus { return &t.Status },
		defaults: mov1.DefaultTNSet,
		reclaim:  func(t *mov1.TNSet) commonv1.ReclaimPolicy { return t.Spec.Storage.ReclaimPolicy },
	})
}

// NewCNSetController returns the CNSet controller.
func NewCNSetController(opts Options) *StoreSetController[*mov1.CNSet] {
	return newStoreSetController(opts, storeKind[*mov1.CNSet]{
		kind: "CNSet", role: build.RoleCN,
		set: func(c *mov1.CNSet, log *mov1.LogSet) build.StoreSet {
			s := build.StoreSet{Namespace: c.Namespace, Name: c.Name, Role: build.RoleCN, Replicas: 1,
				Pods: &c.Spec.PodSetSpec, Storage: &c.Spec.Storage, Log: log, ProxyEnabled: true, ServiceType: "ClusterIP",
				CNLabels: c.Spec.Labels}
			if c.Spec.Replicas != nil {
				s.Replicas = *c.Spec.Replicas
			}
			if c.Spec.ProxyEnabled != nil {
				s.ProxyEnabled = *c.Spec.ProxyEnabled
			}
			return s
		},
		logSet:   func(c *mov1.CNSet) string { return c.Spec.LogSet },
		status:   func(c *mov1.CNSet) *mov1.StoreSetStatus { return &c.Status },
		defaults: mov1.DefaultCNSet,
		reclaim:  func(c *mov1.CNSet) commonv1.ReclaimPolicy { return c.Spec.Storage.ReclaimPolicy },
		drainTimeout: func(c *mov1.CNSet) time.Duration {
			if c.Spec.DrainTimeout == nil {
				return mov1.DefaultDrainTimeout
			}
			return c.Spec.DrainTimeout.Duration
		},
	})
}

// NewProxySetController returns the ProxySet controller: no volumes.
func NewProxySetController(opts Options) *StoreSetController[*mov1.ProxySet] {
	return newStoreSetController(opts, storeKind[*mov1.ProxySet]{
		kind: "ProxySet", role: build.RoleProxy,
		set: func(p *mov1.ProxySet, log *mov1.LogSet) build.StoreSet {
			return build.StoreSet{Namespace: p.Namespace, Name: p.Name, Role: build.RoleProxy, Replicas: p.Spec.Replicas,
				Pods: &p.Spec.PodSetSpec, Log: log, ServiceType: p.Spec.ServiceType}
		},
		logSet:   func(p *mov1.ProxySet) string { return p.Spec.LogSet },
		status:   func(p *mov1.ProxySet) *mov1.StoreSetStatus { return &p.Status },
		defaults: mov1.DefaultProxySet,
		reclaim:  func(*mov1.ProxySet) commonv1.ReclaimPolicy { return "" },
	})
}
