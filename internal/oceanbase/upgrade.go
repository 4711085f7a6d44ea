package oceanbase

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// The upgrade flow and its step, persisted in status.operation (the step's
// earlier name is in its Was).
const (
	flowUpgrade      = "upgrade"
	stepUpgradeZones = "upgrade-zones"
)

// upgradeFlow rolls a new image out zone by zone, as OceanBase's rolling
// upgrade goes: a zone is stopped (ALTER SYSTEM STOP ZONE, which OceanBase
// refuses when a tenant would lose its majority, and which moves the
// zone's leaders away), its observers are re-created on the new image, and
// it is started again once all of them serve; then the next zone. One zone
// is down at a time, and a zone is only stopped while every other zone
// serves. Every zone is walked, in the spec's order, until no observer
// runs another image (ob-operator #540 upgraded one zone of three). A
// cluster of one or two zones cannot stop one (minZonesToStop): its
// observers are re-created one at a time instead.
func (c *Controller) upgradeFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name:        flowUpgrade,
		Steps:       []framework.Step[*Cluster, *cluster]{{Name: stepUpgradeZones, Was: []string{"UpgradeZones"}, Run: c.upgradeZones}},
		MaxAttempts: 10,
	}
}

// outdated returns zone's observer pods that run an old pod spec, by
// ordinal: their template hash is not the spec's, or, for a pod created
// before pods had one, their container runs another image.
func (cl *cluster) outdated(ob *Cluster, zone string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range slices.Sorted(maps.Keys(cl.pods[zone])) {
		p := cl.pods[zone][o]
		if hash, ok := p.Annotations[build.TemplateHashAnnotation]; ok {
			if hash != cl.templates[zone] {
				out = append(out, p)
			}
			continue
		}
		for _, ct := range p.Spec.Containers {
			if ct.Name == build.ContainerName && ct.Image != ob.Spec.Image {
				out = append(out, p)
			}
		}
	}
	return out
}

// upgradeNeeded reports whether some observer runs an old pod spec.
func (cl *cluster) upgradeNeeded(ob *Cluster) bool {
	for _, z := range ob.Spec.Zones {
		if len(cl.outdated(ob, z.Name)) > 0 {
			return true
		}
	}
	return false
}

// zoneServing reports whether every observer of zone is a server
// OceanBase reports serving, and why not.
func (cl *cluster) zoneServing(ob *Cluster, zone string) (bool, string) {
	for _, o := range slices.Sorted(maps.Keys(cl.pods[zone])) {
		p := cl.pods[zone][o]
		srv, ok := cl.servers[cl.addr(p.Name)]
		switch {
		case p.DeletionTimestamp != nil || !workload.IsReady(p):
			return false, fmt.Sprintf("pod %s is not ready", p.Name)
		case !ok:
			return false, fmt.Sprintf("OceanBase does not know %s", p.Name)
		case !srv.Serving():
			return false, fmt.Sprintf("server %s (%s) is %s and not serving", srv.Addr, p.Name, srv.Status)
		}
	}
	if n := len(cl.pods[zone]); n < int(zoneReplicas(ob, zone)) {
		return false, fmt.Sprintf("%d of %d observers exist", n, zoneReplicas(ob, zone))
	}
	return true, ""
}

func zoneReplicas(ob *Cluster, zone string) int32 {
	for _, z := range ob.Spec.Zones {
		if z.Name == zone {
			return z.Replicas
		}
	}
	return 0
}

// upgradeZones makes one move per run: it stops the first zone that runs
// an old image, re-creates its observers once stopped, starts it when they
// serve, and is done when every zone runs the spec's image and is active.
func (c *Controller) upgradeZones(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	ob, op := ctx.Obj, ctx.Operation()
	for _, z := range ob.Spec.Zones {
		old := cl.outdated(ob, z.Name)
		stopped := cl.zones[z.Name].Status == "INACTIVE"
		switch {
		case len(old) == 0 && !stopped:
			continue
		case len(old) == 0:
			if serving, why := cl.zoneServing(ob, z.Name); !serving {
				op.Message = fmt.Sprintf("zone %s runs %s; waiting for its servers: %s", z.Name, ob.Spec.Image, why)
				return false, nil
			}
			ctx.Log.Info("Starting a zone", "zone", z.Name)
			return false, obsql.AlterZone(ctx, cl.db, "START", z.Name)
		case len(ob.Spec.Zones) < minZonesToStop:
			return false, c.replaceOneByOne(ctx, cl, z.Name, old)
		case !stopped:
			return false, c.stopZone(ctx, cl, z.Name)
		}
		op.Message = fmt.Sprintf("zone %s is stopped; %d observers to re-create on %s", z.Name, len(old), ob.Spec.Image)
		for _, p := range old {
			if p.DeletionTimestamp != nil {
				continue
			}
			if _, err := workload.Evict(ctx, ctx.Client, p); err != nil {
				return false, err
			}
			ctx.Log.Info("Re-creating an observer on the spec's pod template", "pod", p.Name, "image", ob.Spec.Image)
		}
		return false, nil
	}
	op.Message = ""
	ctx.Event(corev1.EventTypeNormal, obv1.EventUpgraded, "Every observer runs %s", ob.Spec.Image)
	return true, nil
}

// minZonesToStop is the fewest zones whose cluster can stop one: with one
// or two zones, a zone stopped would leave every tenant with replicas there
// without a majority, and OceanBase refuses STOP ZONE.
const minZonesToStop = 3

// replaceOneByOne upgrades a zone of a cluster too small to stop one (as
// ob-operator's "force upgrade" does): its observers are re-created one at
// a time, each only while every observer of the cluster serves. A tenant
// whose replicas are all on the observer re-created is unavailable
// meanwhile: a single observer cannot be upgraded in place.
func (c *Controller) replaceOneByOne(ctx *Context, cl *cluster, zone string, old []*corev1.Pod) error {
	ob, op := ctx.Obj, ctx.Operation()
	for _, z := range ob.Spec.Zones {
		if serving, why := cl.zoneServing(ob, z.Name); !serving {
			op.Message = fmt.Sprintf("zone %s: one observer at a time; waiting for zone %s: %s", zone, z.Name, why)
			return nil
		}
	}
	p := old[0]
	op.Message = fmt.Sprintf("zone %s: re-creating %s on %s, one observer at a time (%d left)", zone, p.Name, ob.Spec.Image, len(old))
	if _, err := workload.Evict(ctx, ctx.Client, p); err != nil {
		return err
	}
	ctx.Log.Info("Re-creating an observer on the spec's pod template", "pod", p.Name, "image", ob.Spec.Image)
	return nil
}

// stopZone stops zone once every other zone serves.
func (c *Controller) stopZone(ctx *Context, cl *cluster, zone string) error {
	ob := ctx.Obj
	for _, other := range ob.Spec.Zones {
		if other.Name == zone {
			continue
		}
		if serving, why := cl.zoneServing(ob, other.Name); !serving || cl.zones[other.Name].Status != "ACTIVE" {
			ctx.Operation().Message = fmt.Sprintf("zone %s waits for zone %s to serve: %s", zone, other.Name, why)
			return nil
		}
	}
	ctx.Log.Info("Stopping a zone to upgrade it", "zone", zone)
	ctx.Event(corev1.EventTypeNormal, obv1.EventUpgradingZone, "Stopping zone %s to run %s", zone, ob.Spec.Image)
	if err := obsql.AlterZone(ctx, cl.db, "STOP", zone); err != nil {
		return fmt.Errorf("stop zone %s: %w", zone, err)
	}
	return nil
}
