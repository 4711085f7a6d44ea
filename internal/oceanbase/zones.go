package oceanbase

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// Zone flows and their steps, persisted in status.operation (a step's
// earlier names are in its Was).
const (
	flowAddZone            = "add-zone"
	stepAddZones           = "add-zones"
	stepAddZoneServers     = "add-zone-servers"
	stepExtendSysTenant    = "extend-sys-tenant"
	flowRemoveZone         = "remove-zone"
	stepShrinkSysTenant    = "shrink-sys-tenant"
	stepWaitTenantsLeave   = "wait-tenants-leave"
	stepStopZones          = "stop-zones"
	stepDeleteZoneServers  = "delete-zone-servers"
	stepDeleteZones        = "delete-zones"
	stepDeleteStatefulSets = "delete-zone-statefulsets"
	sysTenant              = "sys"
	zoneFlowMaxAttempts    = 10
)

// zoneFlow starts the flow that brings OceanBase's zones to the spec's:
// zones are added before any is removed, so that a zone that replaces
// another serves before the other goes. Nil when the zones match.
func (cl *cluster) zoneFlow(ob *Cluster) Action {
	if joining := cl.joining(ob); len(joining) > 0 {
		return framework.StartFlow[*Cluster](flowAddZone, "add "+strings.Join(joining, ", "))
	}
	if leaving := cl.leavingZones(ob); len(leaving) > 0 {
		return framework.StartFlow[*Cluster](flowRemoveZone, "remove "+strings.Join(leaving, ", "))
	}
	return nil
}

// InterruptFlow ends a zone flow the spec no longer asks for: a removal
// whose zones are back in spec.zones with nothing else to remove, or an
// addition whose zones left spec.zones with nothing else to add. Its
// remaining steps would find nothing to do, and its last would record
// ZonesRemoved or ZonesAdded for zones that were not (and count each step
// in steward_actions_total); the flow that undoes what it did, if any,
// starts in the same pass.
func (c *Controller) InterruptFlow(ctx *Context, cl *cluster, op *commonv1.Operation) (string, bool) {
	if cl == nil || cl.db == nil {
		return "", false // OceanBase was not read: nothing to judge by
	}
	ob := ctx.Obj
	switch op.Name {
	case flowRemoveZone:
		back := slices.DeleteFunc(triggerZones(op.Trigger, "remove "), func(z string) bool { return !inSpec(ob, z) })
		if len(back) > 0 && len(cl.leavingZones(ob)) == 0 {
			return fmt.Sprintf("spec.zones has %s again: no zone to remove", strings.Join(back, ", ")), true
		}
	case flowAddZone:
		gone := slices.DeleteFunc(triggerZones(op.Trigger, "add "), func(z string) bool { return inSpec(ob, z) })
		if len(gone) > 0 && len(cl.joining(ob)) == 0 {
			return fmt.Sprintf("spec.zones no longer has %s: no zone to add", strings.Join(gone, ", ")), true
		}
	}
	return "", false
}

// triggerZones are the zones a zone flow's trigger ("add z4, z5",
// "remove z3") names.
func triggerZones(trigger, verb string) []string {
	rest, ok := strings.CutPrefix(trigger, verb)
	if !ok {
		return nil
	}
	return strings.Split(rest, ", ")
}

// addZoneFlow brings the spec's new zones into OceanBase: each zone is
// added and started, its observers are added as servers once they run,
// and the sys tenant gets a replica there, one zone at a time as OceanBase
// changes a locality. User tenants are left alone: their OBTenants say
// which zones they use. Every step reads OceanBase again, so a flow resumed
// after a restart continues where OceanBase is.
func (c *Controller) addZoneFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowAddZone,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepAddZones, Was: []string{"AddZones"}, Run: c.addZones},
			{Name: stepAddZoneServers, Was: []string{"AddZoneServers"}, Run: c.addZoneServers},
			{Name: stepExtendSysTenant, Was: []string{"ExtendSysTenant"}, Run: c.extendSysTenant},
		},
		MaxAttempts: zoneFlowMaxAttempts,
	}
}

// addZones adds (ALTER SYSTEM ADD ZONE) and starts the joining zones; done
// when OceanBase reports every one ACTIVE.
func (c *Controller) addZones(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	done := true
	for _, z := range cl.joining(ctx.Obj) {
		status := cl.zones[z].Status
		if status == "" {
			if err := obsql.AlterZone(ctx, cl.db, "ADD", z); err != nil {
				return false, err
			}
			ctx.Log.Info("Added a zone", "zone", z)
			ctx.Event(corev1.EventTypeNormal, obv1.EventZoneAdded, "Added zone %s to OceanBase", z)
		}
		if status != "ACTIVE" {
			if err := obsql.AlterZone(ctx, cl.db, "START", z); err != nil {
				return false, err
			}
			ctx.Log.Info("Started a zone", "zone", z)
			done = false
		}
	}
	return done, nil
}

// addZoneServers adds the observers that run and that OceanBase does not
// know (their zones exist now); done when every observer of the joining
// zones is a server OceanBase reports serving.
func (c *Controller) addZoneServers(ctx *Context, seen *cluster) (bool, error) {
	if err := c.addServers(ctx, seen); err != nil {
		return false, err
	}
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	ob, op := ctx.Obj, ctx.Operation()
	for _, z := range cl.joining(ob) {
		if serving, why := cl.zoneServing(ob, z); !serving {
			op.Message = fmt.Sprintf("zone %s waits for its observers: %s", z, why)
			return false, nil
		}
	}
	op.Message = ""
	return true, nil
}

// extendSysTenant gives the sys tenant a replica in each joining zone,
// one zone per locality change: its resource pool is extended to the zone
// (ALTER RESOURCE POOL ... ZONE_LIST), then FULL{1}@zone is added to its
// locality, and the next zone waits until OceanBase finished the change
// (DBA_OB_TENANTS.PREVIOUS_LOCALITY is empty again).
func (c *Controller) extendSysTenant(ctx *Context, seen *cluster) (bool, error) {
	cl, sys, err := sysIdle(ctx, seen)
	if sys == nil || err != nil {
		return false, err
	}
	ob, op := ctx.Obj, ctx.Operation()
	joining := cl.joining(ob)
	if len(joining) == 0 {
		op.Message = ""
		ctx.Event(corev1.EventTypeNormal, obv1.EventZonesAdded, "The sys tenant's locality is %s", sys.Locality)
		return true, nil
	}
	zone := joining[0]
	pool, err := sysPool(ctx, cl, sys)
	if err != nil {
		return false, err
	}
	if !slices.Contains(pool.Zones, zone) {
		ctx.Log.Info("Extending the sys tenant's resource pool", "pool", pool.Name, "zone", zone)
		if err := obsql.SetPoolZones(ctx, cl.db, pool.Name, append(slices.Clone(pool.Zones), zone)); err != nil {
			return false, err
		}
	}
	locality := build.LocalityWith(sys.Locality, zone)
	ctx.Log.Info("Changing the sys tenant's locality", "from", sys.Locality, "to", locality)
	if err := obsql.AlterTenant(ctx, cl.db, sysTenant, "LOCALITY", locality); err != nil {
		return false, err
	}
	op.Message = fmt.Sprintf("adding zone %s to the sys tenant's locality", zone)
	return false, nil
}

// sysIdle returns the sys tenant when no locality change of it is in
// progress; nil (with the operation's message saying so) while one is.
func sysIdle(ctx *Context, seen *cluster) (*cluster, *obsql.Tenant, error) {
	cl, err := connected(seen)
	if err != nil {
		return nil, nil, err
	}
	sys := cl.sys()
	switch {
	case sys == nil:
		return nil, nil, fmt.Errorf("OceanBase lists no sys tenant")
	case sys.PreviousLocality != "":
		ctx.Operation().Message = fmt.Sprintf("OceanBase is changing the sys tenant's locality from %s to %s",
			sys.PreviousLocality, sys.Locality)
		return cl, nil, nil
	}
	return cl, sys, nil
}

// sysPool reads the sys tenant's resource pool.
func sysPool(ctx *Context, cl *cluster, sys *obsql.Tenant) (*obsql.Pool, error) {
	pools, err := obsql.Pools(ctx, cl.db)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		if pools[name].TenantID == sys.ID {
			return pools[name], nil
		}
	}
	return nil, fmt.Errorf("OceanBase lists no resource pool of the sys tenant")
}

// removeZoneFlow takes the zones the spec no longer has out of OceanBase,
// then deletes their StatefulSets: the flow holds, changing nothing, while
// a user tenant still has a replica or a pool there (ob-operator #248:
// OceanBase would never let the servers go), then the sys tenant leaves
// them (locality first, one zone per change, then its pool), each zone is
// stopped, its servers are deleted and waited for, the zone is deleted,
// and only then do its pods and volume claims go (ob-operator #8). Every
// step reads OceanBase again, so a flow resumed after a restart continues
// where OceanBase is.
func (c *Controller) removeZoneFlow() framework.Flow[*Cluster, *cluster] {
	return framework.Flow[*Cluster, *cluster]{
		Name: flowRemoveZone,
		Steps: []framework.Step[*Cluster, *cluster]{
			{Name: stepWaitTenantsLeave, Was: []string{"WaitTenantsLeave"}, Run: c.waitTenantsLeave},
			{Name: stepShrinkSysTenant, Was: []string{"ShrinkSysTenant"}, Run: c.shrinkSysTenant},
			{Name: stepStopZones, Was: []string{"StopZones"}, Run: c.stopLeavingZones},
			{Name: stepDeleteZoneServers, Was: []string{"DeleteZoneServers"}, Run: c.deleteZoneServers},
			{Name: stepDeleteZones, Was: []string{"DeleteZones"}, Run: c.deleteZones},
			{Name: stepDeleteStatefulSets, Was: []string{"RemoveZoneSets"}, Run: c.deleteZoneStatefulSets},
		},
		MaxAttempts: zoneFlowMaxAttempts,
	}
}

// waitTenantsLeave holds the removal while a user tenant has a replica in
// a leaving zone (its locality) or a resource pool there (its units): the
// servers could not be deleted, OceanBase having nowhere to move those
// units. It is the flow's first step, so that nothing changes, the sys
// tenant's locality included, for a removal that cannot finish. The flow
// neither changes anything nor fails; Ready and the operation's message
// say which tenants hold it, and it continues once their zones changed (an
// OBTenant's spec.zones, or ALTER TENANT).
func (c *Controller) waitTenantsLeave(ctx *Context, seen *cluster) (bool, error) {
	if held, err := heldByTenants(ctx, seen); held || err != nil {
		return false, err
	}
	ctx.Operation().Message = ""
	return true, nil
}

// shrinkSysTenant takes the leaving zones out of the sys tenant's
// locality, one zone per change, waiting for each, then out of its pool.
// It changes nothing while a user tenant holds a leaving zone (one may have
// come back since wait-tenants-leave, or a flow begun before that step came
// first may be here): the sys tenant would lose a replica for a removal
// that cannot go on, and with it the majority that losing one more zone
// would take.
func (c *Controller) shrinkSysTenant(ctx *Context, seen *cluster) (bool, error) {
	if held, err := heldByTenants(ctx, seen); held || err != nil {
		return false, err
	}
	cl, sys, err := sysIdle(ctx, seen)
	if sys == nil || err != nil {
		return false, err
	}
	ob, op := ctx.Obj, ctx.Operation()
	leaving := cl.leavingZones(ob)
	for _, zone := range build.LocalityZones(sys.Locality) {
		if !slices.Contains(leaving, zone) {
			continue
		}
		locality := build.LocalityWithout(sys.Locality, zone)
		if locality == "" {
			op.Message = fmt.Sprintf("zone %s holds the sys tenant's last replica: add a zone first", zone)
			return false, nil
		}
		ctx.Log.Info("Changing the sys tenant's locality", "from", sys.Locality, "to", locality)
		if err := obsql.AlterTenant(ctx, cl.db, sysTenant, "LOCALITY", locality); err != nil {
			return false, err
		}
		op.Message = fmt.Sprintf("removing zone %s from the sys tenant's locality", zone)
		return false, nil
	}
	pool, err := sysPool(ctx, cl, sys)
	if err != nil {
		return false, err
	}
	keep := slices.DeleteFunc(slices.Clone(pool.Zones), func(z string) bool { return slices.Contains(leaving, z) })
	if len(keep) < len(pool.Zones) {
		ctx.Log.Info("Shrinking the sys tenant's resource pool", "pool", pool.Name, "zones", keep)
		return false, obsql.SetPoolZones(ctx, cl.db, pool.Name, keep)
	}
	op.Message = ""
	return true, nil
}

// heldByTenants reports whether a user tenant holds a leaving zone, and
// then says so: in the operation's message, in Ready, and in a Warning
// Event when the holds change.
func heldByTenants(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	pools, err := obsql.Pools(ctx, cl.db)
	if err != nil {
		return false, err
	}
	holds := cl.tenantsIn(cl.leavingZones(ctx.Obj), pools)
	if len(holds) == 0 {
		return false, nil
	}
	op := ctx.Operation()
	msg := holdsMessage(holds)
	if op.Message != msg {
		ctx.Log.Info("A zone removal waits for tenants to leave the zone", "holds", holds)
		ctx.Event("Warning", obv1.ReasonZoneRemovalHeld, "%s", msg)
	}
	op.Message = msg
	ctx.SetReady(false, obv1.ReasonZoneRemovalHeld, msg)
	return true, nil
}

// stopLeavingZones stops the leaving zones OceanBase reports ACTIVE; done
// when none is.
func (c *Controller) stopLeavingZones(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	done := true
	for _, z := range cl.leavingZones(ctx.Obj) {
		if cl.zones[z].Status != "ACTIVE" {
			continue
		}
		ctx.Log.Info("Stopping a zone to remove it", "zone", z)
		if err := obsql.AlterZone(ctx, cl.db, "STOP", z); err != nil {
			return false, err
		}
		done = false
	}
	return done, nil
}

// deleteZoneServers deletes from OceanBase every server it lists in a
// leaving zone (again if one is no longer DELETING), and is done when it
// lists none: the pods stay until then.
func (c *Controller) deleteZoneServers(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	leaving := cl.leavingZones(ctx.Obj)
	var waiting []string
	sent := false
	for _, addr := range slices.Sorted(maps.Keys(cl.servers)) {
		srv := cl.servers[addr]
		if !slices.Contains(leaving, srv.Zone) {
			continue
		}
		waiting = append(waiting, fmt.Sprintf("%s in zone %s (%s)", addr, srv.Zone, srv.Status))
		if srv.Status == "DELETING" {
			continue
		}
		if err := obsql.DeleteServer(ctx, cl.db, addr, srv.Zone); err != nil {
			return false, err
		}
		ctx.Log.Info("Deleting a server from OceanBase", "server", addr, "zone", srv.Zone)
		if pod := cl.podAt(addr); pod != "" {
			serverEvent(ctx, pod, corev1.EventTypeNormal, obv1.EventDeletingServer, "Deleting server %s (%s) of zone %s from OceanBase", addr, pod, srv.Zone)
		} else {
			ctx.Event(corev1.EventTypeNormal, obv1.EventDeletingServer, "Deleting server %s of zone %s from OceanBase", addr, srv.Zone)
		}
		sent = true
	}
	if sent {
		// The login may be through one of these servers, which stops
		// answering once deleted: the next pass logs in through a zone
		// that stays.
		c.logins.drop(ctx.Obj.UID, cl.db)
	}
	op := ctx.Operation()
	op.Message = ""
	if len(waiting) > 0 {
		op.Message = "OceanBase still holds " + strings.Join(waiting, ", ")
	}
	return len(waiting) == 0, nil
}

// deleteZones deletes the leaving zones OceanBase still lists (stopped and
// without servers by now); done when it lists none.
func (c *Controller) deleteZones(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	done := true
	for _, z := range cl.leavingZones(ctx.Obj) {
		if _, listed := cl.zones[z]; !listed {
			continue
		}
		if err := obsql.AlterZone(ctx, cl.db, "DELETE", z); err != nil {
			return false, err
		}
		ctx.Log.Info("Deleted a zone", "zone", z)
		ctx.Event(corev1.EventTypeNormal, obv1.EventZoneDeleted, "Deleted zone %s from OceanBase", z)
		done = false
	}
	return done, nil
}

// deleteZoneStatefulSets removes each leaving zone's observers once OceanBase
// lists none of their servers: the StatefulSet is scaled to zero, and once
// its pods are gone their volume claims are deleted (the store of a
// deleted server cannot rejoin: docs/oceanbase.md), then the StatefulSet;
// the servers' Services go with it. Done when no leaving zone's
// StatefulSet is left.
func (c *Controller) deleteZoneStatefulSets(ctx *Context, seen *cluster) (bool, error) {
	cl, err := connected(seen)
	if err != nil {
		return false, err
	}
	ob := ctx.Obj
	for _, zone := range slices.Sorted(maps.Keys(cl.leaving)) {
		lz := cl.leaving[zone]
		sts := lz.set
		switch held := cl.serversIn(zone); {
		case len(held) > 0:
			// Only after a rescue skipped a step: the pods wait for
			// OceanBase all the same (ob-operator #8).
			ctx.Operation().Message = fmt.Sprintf("OceanBase still holds %s of zone %s", strings.Join(held, ", "), zone)
		case sts.DeletionTimestamp != nil:
		case ptr.Deref(sts.Spec.Replicas, 0) > 0:
			patch := client.MergeFrom(sts.DeepCopy())
			sts.Spec.Replicas = ptr.To[int32](0)
			if err := ctx.Client.Patch(ctx, sts, patch); err != nil {
				return false, fmt.Errorf("scale the StatefulSet of zone %s to zero: %w", zone, err)
			}
			ctx.Log.Info("Scaled a removed zone's StatefulSet to zero", "zone", zone, "statefulSet", sts.Name)
		case len(lz.pods) > 0:
			ctx.Operation().Message = fmt.Sprintf("waiting for the %d pods of zone %s to go", len(lz.pods), zone)
		default:
			if err := deleteZoneSet(ctx, zone, sts); err != nil {
				return false, err
			}
		}
	}
	if len(cl.leaving) > 0 {
		return false, nil
	}
	ctx.Operation().Message = ""
	ctx.Event(corev1.EventTypeNormal, obv1.EventZonesRemoved, "The zones are %s", strings.Join(specZones(ob), ", "))
	return true, nil
}

// serversIn are the addresses of the servers OceanBase lists in zone.
func (cl *cluster) serversIn(zone string) []string {
	var out []string
	for _, addr := range slices.Sorted(maps.Keys(cl.servers)) {
		if cl.servers[addr].Zone == zone {
			out = append(out, addr)
		}
	}
	return out
}

// podAt is the pod whose server Service has address addr, "" when none
// has (a server OceanBase lists whose observer Steward does not run).
func (cl *cluster) podAt(addr string) string {
	for _, pod := range slices.Sorted(maps.Keys(cl.ips)) {
		if cl.addr(pod) == addr {
			return pod
		}
	}
	return ""
}

// deleteZoneSet deletes a removed zone's volume claims, then its
// StatefulSet (whose pods are gone).
func deleteZoneSet(ctx *Context, zone string, sts *appsv1.StatefulSet) error {
	claims, err := zoneSet(ctx.Obj, zone).Claims(ctx, ctx.Client)
	if err != nil {
		return err
	}
	deleted, err := workload.DeleteClaims(ctx, ctx.Client, claims, func(int) bool { return true })
	if err != nil {
		return err
	}
	for _, name := range deleted {
		ctx.Log.Info("Deleted the volume claim of a deleted server", "claim", name, "zone", zone)
	}
	uid := sts.UID
	switch err := ctx.Client.Delete(ctx, sts, client.Preconditions{UID: &uid}); {
	case apierrors.IsNotFound(err): // gone already; the cache lags
	case err != nil:
		return fmt.Errorf("delete the StatefulSet of zone %s: %w", zone, err)
	default:
		ctx.Log.Info("Deleted a removed zone's StatefulSet", "zone", zone, "statefulSet", sts.Name)
	}
	return nil
}
