package oceanbase

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// writeStatus fills the servers, zones, counts and parameter drift from
// what was observed: the spec's zones, then the zones leaving (their
// observers run until the remove-zone flow has had OceanBase let them go).
func (c *Controller) writeStatus(ob *Cluster, cl *cluster) {
	st := &ob.Status
	st.Servers, st.Zones, st.ActiveServers, st.RootService = nil, nil, 0, ""
	if cl.driftRead {
		st.ParameterDrift = cl.drift
	}
	zones := specZones(ob)
	for _, zone := range append(slices.Clone(zones), cl.leavingZones(ob)...) {
		zs := obv1.OBZoneStatus{Name: zone, Status: cl.zones[zone].Status, Leaving: !slices.Contains(zones, zone)}
		st.Servers = append(st.Servers, cl.serverStatuses(zone, zs.Leaving)...)
		for _, srv := range cl.servers {
			if srv.Zone != zone {
				continue
			}
			zs.Servers++
			if srv.Serving() {
				zs.ActiveServers++
			}
			if srv.RootService {
				st.RootService = srv.Addr
			}
		}
		st.ActiveServers += zs.ActiveServers
		st.Zones = append(st.Zones, zs)
	}
	if images := imagesOf(cl); len(images) == 1 {
		st.Image = images[0]
	}
}

// serverStatuses returns the status of each observer of zone, by ordinal:
// its pod, and what OceanBase says of its server (a leaving zone's
// observers as the remove-zone flow found them).
func (cl *cluster) serverStatuses(zone string, leaving bool) []obv1.OBServerStatus {
	pods := cl.pods[zone]
	if lz := cl.leaving[zone]; leaving && lz != nil {
		pods = lz.pods
	}
	var out []obv1.OBServerStatus
	for _, o := range slices.Sorted(maps.Keys(pods)) {
		p := pods[o]
		s := obv1.OBServerStatus{Pod: p.Name, Zone: zone, Address: cl.addr(p.Name), PodReady: workload.IsReady(p),
			Image: podImage(p)}
		if srv, ok := cl.servers[s.Address]; ok && s.Address != "" {
			s.Status, s.BuildVersion = srv.Status, srv.BuildVersion
			if srv.StartService != nil {
				s.StartServiceTime = &metav1.Time{Time: *srv.StartService}
			}
		}
		out = append(out, s)
	}
	return out
}

func imagesOf(cl *cluster) []string {
	seen := map[string]bool{}
	for _, pods := range cl.pods {
		for _, p := range pods {
			for _, ct := range p.Spec.Containers {
				if ct.Name == build.ContainerName {
					seen[ct.Image] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// podImage is the image of p's observer container.
func podImage(p *corev1.Pod) string {
	for _, ct := range p.Spec.Containers {
		if ct.Name == build.ContainerName {
			return ct.Image
		}
	}
	return ""
}

// setStoresLost sets StoresLost from the servers that lost their store:
// True while there are (Recovering, or MajorityLost while OceanBase could
// not rebuild their replicas), False otherwise. It is left as it was when
// OceanBase was not read.
func (c *Controller) setStoresLost(ctx *Context, cl *cluster) {
	switch {
	case cl.db == nil:
	case len(cl.lost) == 0:
		ctx.SetCondition(obv1.ConditionStoresLost, metav1.ConditionFalse, obv1.ReasonNoStoreLost, "")
	case cl.unrecoverable != "":
		ctx.SetCondition(obv1.ConditionStoresLost, metav1.ConditionTrue, obv1.ReasonMajorityLost,
			describeLost(cl.lost)+"; not recovered while "+cl.unrecoverable)
	default:
		ctx.SetCondition(obv1.ConditionStoresLost, metav1.ConditionTrue, obv1.ReasonRecovering, describeLost(cl.lost)+"; recovering")
	}
}

// setBootstrapped sets Bootstrapped: True once the bootstrap flow
// recorded the bootstrap, else whether it can start.
func (c *Controller) setBootstrapped(ctx *Context, cl *cluster) {
	ob := ctx.Obj
	switch {
	case ob.Status.BootstrappedAt != nil:
		ctx.SetCondition(obv1.ConditionBootstrapped, metav1.ConditionTrue, obv1.ReasonBootstrapped,
			"bootstrapped at "+ob.Status.BootstrappedAt.UTC().Format("2006-01-02T15:04:05Z"))
	case cl.seedsReady(ob):
		ctx.SetCondition(obv1.ConditionBootstrapped, metav1.ConditionFalse, obv1.ReasonBootstrapping,
			"the first observer of every zone runs; bootstrapping")
	default:
		ctx.SetCondition(obv1.ConditionBootstrapped, metav1.ConditionFalse, obv1.ReasonWaitingForObservers,
			"waiting for the first observer of every zone to run")
	}
}

// setReady sets Ready (readiness).
func (c *Controller) setReady(ctx *Context, cl *cluster) {
	r := cl.readiness(ctx.Obj)
	ctx.SetReady(r.ready, r.reason, r.message)
}

// describeLost names the servers that lost their store.
func describeLost(lost []obv1.OBLostServer) string {
	var out []string
	for _, l := range lost {
		out = append(out, fmt.Sprintf("%s (%s)", l.Address, l.Pod))
	}
	return "lost stores: " + strings.Join(out, ", ")
}

// readiness is the cluster's Ready, from what the pass observed (ob's
// status written): True when every observer of the spec's zones serves
// as its OBServer and OBZone views say (its pod ready, OceanBase's server
// ACTIVE and serving, its zone ACTIVE), OceanBase lists no other server,
// the sys tenant's locality is the spec's zones, and no parameter
// differs. Otherwise the reason and message say what is missing.
func (cl *cluster) readiness(ob *Cluster) readyCondition {
	switch {
	case ob.Status.BootstrappedAt == nil:
		return readyCondition{reason: obv1.ReasonWaitingForObservers, message: "not bootstrapped yet"}
	case cl.err != nil:
		return readyCondition{reason: obv1.ReasonUnreachable, message: cl.err.Error()}
	case len(cl.holds) > 0:
		return readyCondition{reason: obv1.ReasonZoneRemovalHeld, message: holdsMessage(cl.holds)}
	}
	var notServing []string
	for _, z := range ob.Spec.Zones {
		if r := zoneServes(ob, z.Name); !r.ready {
			notServing = append(notServing, fmt.Sprintf("zone %s: %s", z.Name, r.message))
		}
	}
	if len(notServing) > 0 {
		return readyCondition{reason: obv1.ReasonServersNotServing, message: strings.Join(notServing, "; ")}
	}
	if leaving := cl.leavingServers(ob); len(leaving) > 0 {
		return readyCondition{reason: obv1.ReasonServersLeaving, message: "OceanBase still has servers the spec does not: " +
			strings.Join(leaving, ", ")}
	}
	if why := cl.zonesChanging(ob); why != "" {
		return readyCondition{reason: obv1.ReasonZonesChanging, message: why}
	}
	if d := ob.Status.ParameterDrift; len(d) > 0 {
		return readyCondition{reason: obv1.ReasonParametersDrifted, message: fmt.Sprintf("parameter %s differs from the spec on %s",
			d[0].Name, strings.Join(d[0].Servers, ", "))}
	}
	want := int32(0)
	for _, z := range ob.Spec.Zones {
		want += max(z.Replicas, 1)
	}
	return readyCondition{ready: true, message: fmt.Sprintf("%d servers in %d zones serving", want, len(ob.Spec.Zones))}
}

// leavingServers are the servers OceanBase lists or the observers that
// run beyond the spec's: a scale-in's departing observers, a leaving
// zone's, and servers at no observer's address (lost ones a recovery
// deletes), each with its state.
func (cl *cluster) leavingServers(ob *Cluster) []string {
	var out []string
	mine := map[string]bool{}
	for _, s := range ob.Status.Servers {
		if s.Address != "" {
			mine[s.Address] = true
		}
		if specObserver(ob, s) {
			continue
		}
		state := s.Status
		if state == "" {
			state = "no longer a server, its pod going"
		}
		out = append(out, fmt.Sprintf("%s of zone %s (%s)", s.Pod, s.Zone, state))
	}
	for _, addr := range slices.Sorted(maps.Keys(cl.servers)) {
		if !mine[addr] {
			srv := cl.servers[addr]
			out = append(out, fmt.Sprintf("%s of zone %s (%s)", addr, srv.Zone, srv.Status))
		}
	}
	return out
}

// specObserver reports whether s is an observer the spec has: in one of
// its zones, with an ordinal below the zone's replicas.
func specObserver(ob *Cluster, s obv1.OBServerStatus) bool {
	for _, z := range ob.Spec.Zones {
		if z.Name != s.Zone {
			continue
		}
		for o := range int(max(z.Replicas, 1)) {
			if build.PodName(ob, z.Name, o) == s.Pod {
				return true
			}
		}
	}
	return false
}

// zonesChanging says how the sys tenant's locality is not the spec's
// zones yet (a zone added or removed, a locality change OceanBase runs);
// empty when it is.
func (cl *cluster) zonesChanging(ob *Cluster) string {
	sys := cl.sys()
	switch {
	case sys == nil:
		return ""
	case sys.PreviousLocality != "":
		return fmt.Sprintf("OceanBase is changing the sys tenant's locality from %s to %s", sys.PreviousLocality, sys.Locality)
	}
	if joining := cl.joining(ob); len(joining) > 0 {
		return fmt.Sprintf("the sys tenant has no replica in zone %s yet (locality %s)", strings.Join(joining, ", "), sys.Locality)
	}
	if leaving := cl.leavingZones(ob); len(leaving) > 0 {
		return fmt.Sprintf("zone %s is being removed", strings.Join(leaving, ", "))
	}
	return ""
}

// holdsMessage says what holds a zone removal, and what to do.
func holdsMessage(holds []string) string {
	return "held: " + strings.Join(holds, "; ") + "; change those tenants' zones (an OBTenant's spec.zones) to let the zone go"
}
