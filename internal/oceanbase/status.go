package oceanbase

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// cluster is what a pass observed.
type cluster struct {
	sets map[string]*appsv1.StatefulSet // by zone
	// pods are the observers' pods by zone and ordinal, terminating ones
	// included.
	pods map[string]map[int]*corev1.Pod
	// ips are the server Services' cluster IPs by pod name.
	ips map[string]string
	// db is the operator's login to OceanBase; nil before the bootstrap or
	// when no observer answered (err says why).
	db      *sql.DB
	err     error
	servers map[string]obsql.Server // by address
	zones   map[string]obsql.Zone
	// tenants are DBA_OB_TENANTS; leaving are the zones the spec no longer
	// has whose StatefulSets remain (zones.go).
	tenants []obsql.Tenant
	leaving map[string]*leavingZone
	// templates are the pod templates' hashes the spec makes, by zone
	// (build.TemplateHashAnnotation).
	templates map[string]string
	// svcs are the server Services and claims the observers' volume
	// claims, by pod name (recover.go).
	svcs   map[string]*corev1.Service
	claims map[string]*corev1.PersistentVolumeClaim
	// lost are the servers to recover (lostServers), found once per pass
	// by Declare, which sets StoresLost from them on every pass, a flow's
	// included.
	lost []obv1.OBLostServer
	// holds say which tenants and pools hold a leaving zone (tenantsIn);
	// read only while a zone leaves.
	holds []string
	// unanswered are the ready observers OceanBase does not know yet
	// whose Service does not answer yet, by pod name, with why: ADD
	// SERVER (or BOOTSTRAP) reaches an observer through its Service, which
	// routes to the pod a moment after the pod is ready.
	unanswered map[string]string
}

// addr is the server address of pod name, "" before its Service has an IP.
func (cl *cluster) addr(pod string) string {
	if ip := cl.ips[pod]; ip != "" {
		return net.JoinHostPort(ip, fmt.Sprint(build.RPCPort))
	}
	return ""
}

// replicas is the number of observers zone's StatefulSet should have:
// what a running or failed flow holds it at (status.operation.held: a
// scale-in's remove-observers step, once OceanBase has let the departing
// servers go), but never fewer than the spec's; without a hold, the spec's,
// except that a StatefulSet with more keeps them, as their servers may be
// in OceanBase still.
func (cl *cluster) replicas(ob *Cluster, zone obv1.OBZoneSpec, op *commonv1.Operation) int32 {
	if held, ok := op.HeldReplicas(build.StatefulSetName(ob, zone.Name)); ok {
		return max(held, zone.Replicas)
	}
	sts := cl.sets[zone.Name]
	if sts == nil {
		return zone.Replicas
	}
	return max(ptr.Deref(sts.Spec.Replicas, 0), zone.Replicas)
}

// seedsReady reports whether the first observer of every zone is ready
// and has its address: what a bootstrap needs.
func (cl *cluster) seedsReady(ob *Cluster) bool {
	for _, z := range ob.Spec.Zones {
		p := cl.pods[z.Name][0]
		if p == nil || !workload.IsReady(p) || cl.addr(p.Name) == "" || cl.unanswered[p.Name] != "" {
			return false
		}
	}
	return true
}

// hosts are the IPs of the observers to connect to, ready ones first.
func (cl *cluster) hosts() []string {
	var ready, other []string
	for _, zone := range slices.Sorted(maps.Keys(cl.pods)) {
		for _, o := range slices.Sorted(maps.Keys(cl.pods[zone])) {
			p := cl.pods[zone][o]
			ip := cl.ips[p.Name]
			switch {
			case ip == "":
			case workload.IsReady(p):
				ready = append(ready, ip)
			default:
				other = append(other, ip)
			}
		}
	}
	return append(ready, other...)
}

// departing returns the pods beyond each zone's spec replicas whose
// StatefulSet still has them: the servers a scale-in removes.
func (cl *cluster) departing(ob *Cluster) []string {
	var out []string
	for _, z := range ob.Spec.Zones {
		sts := cl.sets[z.Name]
		if sts == nil {
			continue
		}
		for o := int(z.Replicas); o < int(ptr.Deref(sts.Spec.Replicas, 0)); o++ {
			out = append(out, build.PodName(ob, z.Name, o))
		}
	}
	return out
}

// missingServers returns the ready observers OceanBase does not know, by
// pod name with their zone.
func (cl *cluster) missingServers() map[string]string {
	out := map[string]string{}
	for zone, pods := range cl.pods {
		for _, p := range pods {
			addr := cl.addr(p.Name)
			if addr == "" || !workload.IsReady(p) || p.DeletionTimestamp != nil || cl.unanswered[p.Name] != "" {
				continue
			}
			if _, known := cl.servers[addr]; !known {
				out[p.Name] = zone
			}
		}
	}
	return out
}

// zoneSet is zone's StatefulSet as a set of pods and volume claims.
func zoneSet(ob *Cluster, zone string) workload.Set {
	return workload.Set{Namespace: ob.Namespace, Name: build.StatefulSetName(ob, zone),
		Selector: build.Selector(ob, build.ComponentObserver), Volume: build.DataVolume}
}

// observe reads the StatefulSets, pods and server Services, and, once the
// cluster is bootstrapped, OceanBase's servers and zones.
func (c *Controller) observe(ctx *Context) (*cluster, error) {
	ob := ctx.Obj
	cl := &cluster{sets: map[string]*appsv1.StatefulSet{}, pods: map[string]map[int]*corev1.Pod{},
		ips: map[string]string{}, servers: map[string]obsql.Server{}, zones: map[string]obsql.Zone{}, templates: map[string]string{},
		svcs: map[string]*corev1.Service{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for _, z := range ob.Spec.Zones {
		cl.templates[z.Name] = build.PodTemplateHash(ob, z, c.opts.ClusterDomain)
		sts := &appsv1.StatefulSet{}
		err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: ob.Namespace, Name: build.StatefulSetName(ob, z.Name)}, sts)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("get the StatefulSet of zone %s: %w", z.Name, err)
		}
		if err == nil {
			cl.sets[z.Name] = sts
		}
		pods, err := zoneSet(ob, z.Name).Pods(ctx, ctx.Client)
		if err != nil {
			return nil, err
		}
		cl.pods[z.Name] = pods
		set := zoneSet(ob, z.Name)
		claims, err := set.Claims(ctx, ctx.Client)
		if err != nil {
			return nil, err
		}
		for o, pvc := range claims {
			cl.claims[set.PodName(o)] = pvc
		}
	}
	if err := observeLeaving(ctx, cl); err != nil {
		return nil, err
	}
	var svcs corev1.ServiceList
	if err := ctx.Client.List(ctx, &svcs, client.InNamespace(ob.Namespace),
		client.MatchingLabels(build.Selector(ob, build.ComponentServer))); err != nil {
		return nil, fmt.Errorf("list the server Services: %w", err)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		cl.svcs[s.Name] = s
		if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
			cl.ips[s.Name] = s.Spec.ClusterIP
		}
	}
	if ob.Status.BootstrappedAt != nil {
		c.observeOceanBase(ctx, cl)
	}
	c.probeServices(ctx, cl)
	c.writeStatus(ob, cl)
	return cl, nil
}

// serviceAnswerTimeout bounds the probe of an observer's Service.
const serviceAnswerTimeout = time.Second

// probeServices finds which observers about to be bootstrapped or added
// (ready, and not servers OceanBase knows) do not answer on their
// Service's address yet (cluster.unanswered): a pod is ready once its
// observer listens, and its Service routes to it a moment later, so an ADD
// SERVER sent at once was refused, "server not reachable", with a Warning.
// They are left for a later pass.
func (c *Controller) probeServices(ctx *Context, cl *cluster) {
	bootstrapped := ctx.Obj.Status.BootstrappedAt != nil
	if bootstrapped && cl.db == nil {
		return // OceanBase did not answer: nothing is added this pass
	}
	cl.unanswered = map[string]string{}
	for _, zone := range slices.Sorted(maps.Keys(cl.pods)) {
		for o, p := range cl.pods[zone] {
			ip := cl.ips[p.Name]
			switch {
			case ip == "" || !workload.IsReady(p) || p.DeletionTimestamp != nil:
			case !bootstrapped && o != 0:
			case bootstrapped && cl.server(cl.addr(p.Name)) != nil:
			default:
				if err := c.serviceAnswers(ctx, ip); err != nil {
					cl.unanswered[p.Name] = err.Error()
				}
			}
		}
	}
}

// serviceAnswers reports whether an observer answers on its Service's
// address, as OceanBase reaches it (the RPC port).
func (c *Controller) serviceAnswers(ctx context.Context, ip string) error {
	d := net.Dialer{Timeout: serviceAnswerTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(c.opts.Resolve(ip), fmt.Sprint(build.RPCPort)))
	if err != nil {
		return err
	}
	return conn.Close()
}

// observeOceanBase logs in as the operator and reads the servers, the zones
// and the spec's parameters. A failure is reported in status, not
// returned: the pods are still reconciled.
func (c *Controller) observeOceanBase(ctx *Context, cl *cluster) {
	ob := ctx.Obj
	pw, err := framework.ReadPassword(ctx, ctx.Client, ob.Namespace, ob.Spec.Credentials.Operator)
	if err == nil {
		cl.db, err = c.logins.operator(ctx, clusterHolder(ob), ob.UID, cl.hosts(), pw)
	}
	var servers []obsql.Server
	var zones []obsql.Zone
	if err == nil {
		servers, err = obsql.Servers(ctx, cl.db)
	}
	if err == nil {
		zones, err = obsql.Zones(ctx, cl.db)
	}
	if err == nil {
		cl.tenants, err = obsql.Tenants(ctx, cl.db)
	}
	if err == nil {
		ob.Status.ParameterDrift, err = parameterDrift(ctx, cl.db, ob.Spec.Parameters)
	}
	if err == nil {
		for _, s := range servers {
			cl.servers[s.Addr] = s
		}
		for _, z := range zones {
			cl.zones[z.Name] = z
		}
		err = cl.readHolds(ctx, ob)
	}
	if err != nil {
		if cl.db != nil {
			c.logins.drop(ob.UID, cl.db)
		}
		cl.db, cl.err = nil, err
		cl.servers, cl.zones, cl.tenants, cl.holds = map[string]obsql.Server{}, map[string]obsql.Zone{}, nil, nil
		return
	}
}

// readHolds reads which tenants and pools hold the leaving zones, if any
// zone leaves: Ready says so on every pass, not only on the passes that
// run the remove-zone flow's step.
func (cl *cluster) readHolds(ctx context.Context, ob *Cluster) error {
	leaving := cl.leavingZones(ob)
	if len(leaving) == 0 {
		return nil
	}
	pools, err := obsql.Pools(ctx, cl.db)
	if err != nil {
		return err
	}
	cl.holds = cl.tenantsIn(leaving, pools)
	return nil
}

// parameterDrift compares the spec's parameters with every server's value
// (case-insensitively, as OceanBase prints booleans its own way).
func parameterDrift(ctx context.Context, db *sql.DB, params []obv1.Parameter) ([]obv1.ParameterDrift, error) {
	var out []obv1.ParameterDrift
	for _, p := range params {
		values, err := obsql.ParameterValues(ctx, db, p.Name)
		if err != nil {
			return nil, err
		}
		var servers []string
		for _, addr := range slices.Sorted(maps.Keys(values)) {
			if !strings.EqualFold(values[addr], p.Value) {
				servers = append(servers, addr+"="+values[addr])
			}
		}
		if len(values) == 0 {
			servers = []string{"(no server reports it)"}
		}
		if len(servers) > 0 {
			out = append(out, obv1.ParameterDrift{Name: p.Name, Servers: servers})
		}
	}
	return out, nil
}

// writeStatus fills the servers, zones and counts from what was observed:
// the spec's zones, then the zones leaving (their observers run until the
// remove-zone flow has had OceanBase let them go).
func (c *Controller) writeStatus(ob *Cluster, cl *cluster) {
	st := &ob.Status
	st.Servers, st.Zones, st.ActiveServers, st.RootService = nil, nil, 0, ""
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

// setConditions sets Bootstrapped and Ready.
func (c *Controller) setConditions(ctx *Context, cl *cluster) {
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
	r := cl.readiness(ob)
	ctx.SetReady(r.ready, r.reason, r.message)
}

// readiness is the cluster's Ready, from what the pass observed (ob's
// status written): True when every observer of the spec's zones serves
// as its OBServer and OBZone views say (its pod ready, OceanBase's server
// ACTIVE and serving, its zone ACTIVE), OceanBase lists no other server,
// the sys tenant's locality is the spec's zones, and no parameter
// differs. Otherwise the reason and message say what is missing.
func (cl *cluster) readiness(ob *Cluster) viewReady {
	switch {
	case ob.Status.BootstrappedAt == nil:
		return viewReady{reason: obv1.ReasonWaitingForObservers, message: "not bootstrapped yet"}
	case cl.err != nil:
		return viewReady{reason: obv1.ReasonUnreachable, message: cl.err.Error()}
	case len(cl.holds) > 0:
		return viewReady{reason: obv1.ReasonZoneRemovalHeld, message: holdsMessage(cl.holds)}
	}
	var notServing []string
	for _, z := range ob.Spec.Zones {
		if r := zoneServes(ob, z.Name); !r.ready {
			notServing = append(notServing, fmt.Sprintf("zone %s: %s", z.Name, r.message))
		}
	}
	if len(notServing) > 0 {
		return viewReady{reason: obv1.ReasonServersNotServing, message: strings.Join(notServing, "; ")}
	}
	if leaving := cl.leavingServers(ob); len(leaving) > 0 {
		return viewReady{reason: obv1.ReasonServersLeaving, message: "OceanBase still has servers the spec does not: " +
			strings.Join(leaving, ", ")}
	}
	if why := cl.zonesChanging(ob); why != "" {
		return viewReady{reason: obv1.ReasonZonesChanging, message: why}
	}
	if d := ob.Status.ParameterDrift; len(d) > 0 {
		return viewReady{reason: obv1.ReasonParametersDrifted, message: fmt.Sprintf("parameter %s differs from the spec on %s",
			d[0].Name, strings.Join(d[0].Servers, ", "))}
	}
	want := int32(0)
	for _, z := range ob.Spec.Zones {
		want += max(z.Replicas, 1)
	}
	return viewReady{ready: true, message: fmt.Sprintf("%d servers in %d zones serving", want, len(ob.Spec.Zones))}
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
