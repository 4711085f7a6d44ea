package oceanbase

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// The scale-in flow and its steps, persisted in status.operation (a step's
// earlier names are in its Was).
const (
	flowScaleIn         = "scale-in"
	stepDeleteServers   = "delete-servers"
	stepWaitDeleted     = "wait-servers-deleted"
	stepRemoveObservers = "remove-observers"
)

func scaleInTrigger(pods []string) string { return "remove " + strings.Join(pods, ", ") }

// scaleInFlow removes the observers beyond a zone's replicas: each server
// is deleted from OceanBase, which moves its units to the zone's other
// servers; only when OceanBase has let every one go do the pods go, and
// their volume claims with them (the store of a deleted server cannot
// rejoin: docs/oceanbase.md). The servers are the highest ordinals, chosen
// again from the StatefulSets on every run, never one OceanBase is already
// deleting for another reason (ob-operator #155).
func (c *Controller) scaleInFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowScaleIn,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepDeleteServers, Was: []string{"DeleteServers"}, Run: c.deleteServers},
			{Name: stepWaitDeleted, Was: []string{"WaitServersDeleted"}, Run: c.waitServersDeleted},
			// Named "Shrink" while Declare shrank the StatefulSets on seeing
			// it run; it holds them now (status.operation.held).
			{Name: stepRemoveObservers, Was: []string{"Shrink"}, Run: c.removeObservers},
		},
		MaxAttempts: 10,
	}
}

func (c *Controller) deleteServers(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	for _, pod := range cl.departing(ctx.Obj) {
		addr := cl.addr(pod)
		srv, known := cl.servers[addr]
		if addr == "" || !known || srv.Status == "DELETING" {
			continue
		}
		if err := obsql.DeleteServer(ctx, cl.db, addr, srv.Zone); err != nil {
			return false, err
		}
		ctx.Log.Info("Deleting a server from OceanBase", "pod", pod, "server", addr)
		serverEvent(ctx, pod, corev1.EventTypeNormal, obv1.EventDeletingServer, "Deleting server %s (%s) from OceanBase", addr, pod)
	}
	return true, nil
}

// waitServersDeleted waits until OceanBase no longer lists the departing
// servers. A server OceanBase keeps DELETING (its units have nowhere to
// go) holds the flow here, saying so, for as long as it takes: the pod must
// not go before OceanBase lets the server go (ob-operator #8, #248).
func (c *Controller) waitServersDeleted(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	var waiting []string
	for _, pod := range cl.departing(ctx.Obj) {
		if srv, known := cl.servers[cl.addr(pod)]; known {
			waiting = append(waiting, fmt.Sprintf("%s (%s)", srv.Addr, srv.Status))
		}
	}
	if op := ctx.Operation(); op != nil {
		op.Message = ""
		if len(waiting) > 0 {
			op.Message = "OceanBase still holds " + strings.Join(waiting, ", ") +
				": its units are moving to the zone's other servers, or have no server to go to"
		}
	}
	return len(waiting) == 0, nil
}

// removeObservers releases the departing observers, whose servers
// OceanBase has let go by now: it holds each zone's StatefulSet that has
// more observers than the zone's replicas at the replicas
// (status.operation.held), which Declare applies, and once the cache shows
// the StatefulSet at that size and the departed pods are gone, deletes
// their volume claims. Done then: after the flow Declare keeps the size
// the cache shows. A claim is deleted only once the StatefulSet no longer
// asks for its pod, or the StatefulSet would create the pod again on a new
// claim.
//
// It never releases an observer whose server OceanBase still lists
// (ob-operator #8): the replicas lowered again while the step runs name
// observers the earlier steps did not delete, so the step holds the set
// above the highest of them (releaseFloor) and leaves them to the next
// scale-in, which Observe starts once this one is done.
func (c *Controller) removeObservers(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	ob, op := ctx.Obj, ctx.Operation()
	done := true
	for _, z := range ob.Spec.Zones {
		name, size := build.StatefulSetName(ob, z.Name), int32(0)
		if sts := cl.sets[z.Name]; sts != nil {
			size = ptr.Deref(sts.Spec.Replicas, 0)
		}
		floor := cl.releaseFloor(z)
		// A zone held already is held again: at this run's floor, should
		// the replicas have changed since.
		if _, held := op.HeldReplicas(name); held || size > floor {
			op.Hold(name, floor)
		}
		for o := range cl.pods[z.Name] {
			if o >= int(floor) {
				done = false
			}
		}
		if size > floor {
			done = false
			continue
		}
		claims, err := zoneSet(ob, z.Name).Claims(ctx, ctx.Client)
		if err != nil {
			return false, err
		}
		deleted, err := workload.DeleteClaims(ctx, ctx.Client, claims, func(o int) bool {
			return o >= int(floor) && cl.pods[z.Name][o] == nil
		})
		if err != nil {
			return false, err
		}
		for _, claim := range deleted {
			ctx.Log.Info("Deleted the volume claim of a deleted server", "claim", claim)
		}
	}
	return done, nil
}

// releaseFloor is the size below which zone's StatefulSet may not shrink:
// its replicas, or one above the highest observer whose server OceanBase
// still lists.
func (cl *cluster) releaseFloor(zone obv1.OBZoneSpec) int32 {
	floor := zone.Replicas
	for o, p := range cl.pods[zone.Name] {
		if o >= int(floor) && cl.server(cl.addr(p.Name)) != nil {
			floor = int32(o) + 1
		}
	}
	return floor
}
