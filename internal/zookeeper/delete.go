package zookeeper

import (
	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Finalize runs when the cluster is deleted. Owner references take the
// StatefulSet, Services, ConfigMaps, Secret and budget away; the volume
// claims follow spec.storage.reclaimPolicy: Retain keeps them all, so that
// a cluster re-created under the same name finds its data, and Delete
// deletes them all, those of departed members too (the StatefulSet's own
// retention policy only covers the pods it has).
func (c *Controller) Finalize(ctx *Context) (bool, error) {
	zk := ctx.Obj
	c.forgetCluster(zk)
	if zk.Spec.Storage.ReclaimPolicy != commonv1.ReclaimDelete {
		return true, nil
	}
	if err := c.deleteVolumes(ctx, "deleted cluster", func(int) bool { return true }); err != nil {
		return false, err
	}
	return true, nil
}
