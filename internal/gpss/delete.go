package gpss

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
)

// Finalize runs when the cluster is deleted. Owner references take the
// StatefulSets, Services, ConfigMaps and ServiceAccount away; the managed
// etcd's volume claims follow spec.etcd.managed.storage.reclaimPolicy:
// Retain (the default) keeps them, so that a cluster re-created under the
// same name finds its jobs, and Delete deletes them. The instances keep no
// volumes.
func (c *Controller) Finalize(ctx *Context) (bool, error) {
	g := ctx.Obj
	c.instances.Forget(framework.Group(g), nil)
	m := g.Spec.Etcd.Managed
	if !build.ManagesEtcd(g) || m == nil || m.Storage.ReclaimPolicy != commonv1.ReclaimDelete {
		return true, nil
	}
	set := workload.Set{Namespace: g.Namespace, Name: build.EtcdName(g),
		Selector: build.Selector(g, build.ComponentEtcd), Volume: build.EtcdDataVolume}
	claims, err := set.Claims(ctx, ctx.Client)
	if err != nil {
		return false, err
	}
	deleted, err := workload.DeleteClaims(ctx, ctx.Client, claims, func(int) bool { return true })
	for _, name := range deleted {
		ctx.Event(corev1.EventTypeNormal, commonv1.EventVolumeDeleted, "Deleted the etcd's volume claim %s (reclaimPolicy Delete)", name)
	}
	if err != nil {
		return false, fmt.Errorf("delete the etcd's volume claims: %w", err)
	}
	return true, nil
}
