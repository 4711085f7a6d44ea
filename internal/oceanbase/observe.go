package oceanbase

import (
	"context"
	"database/sql"
	"errors"
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

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// cluster is what a pass observed of an OBCluster: its StatefulSets, pods,
// Services and volume claims, and what OceanBase says. Declare builds it
// (observe), writes status from it and returns it, for Observe, the flows'
// steps and InterruptFlow.
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
	// has whose StatefulSets remain (observeLeaving).
	tenants []obsql.Tenant
	leaving map[string]*leavingZone
	// templates are the pod templates' hashes the spec makes, by zone
	// (build.TemplateHashAnnotation).
	templates map[string]string
	// svcs are the server Services and claims the observers' volume
	// claims, by pod name (recover.go uses them).
	svcs   map[string]*corev1.Service
	claims map[string]*corev1.PersistentVolumeClaim
	// lost are the servers whose observer lost its store (lostStores),
	// found once per pass, from which Declare sets StoresLost on every
	// pass, a flow's included; unrecoverable says why the recover flow
	// leaves them (a majority of zones does not serve), empty when it may
	// replace them (toRecover).
	lost          []obv1.OBLostServer
	unrecoverable string
	// drift is how the servers' parameters differ from the spec's, when
	// OceanBase answered that far (driftRead); status keeps what it said
	// otherwise.
	drift     []obv1.ParameterDrift
	driftRead bool
	// holds say which tenants and pools hold a leaving zone (tenantsIn);
	// read only while a zone leaves.
	holds []string
	// unanswered are the ready observers OceanBase does not know yet
	// whose Service does not answer yet, by pod name, with why: ADD
	// SERVER (or BOOTSTRAP) reaches an observer through its Service, which
	// routes to the pod a moment after the pod is ready.
	unanswered map[string]string
}

// leavingZone is a zone the spec no longer has whose StatefulSet remains:
// its pods run until the remove-zone flow has had OceanBase let their
// servers go.
type leavingZone struct {
	set  *appsv1.StatefulSet
	pods map[int]*corev1.Pod
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
	if cl.db != nil {
		cl.lost, cl.unrecoverable = lostStores(ob, cl)
	}
	return cl, nil
}

// zoneSet is zone's StatefulSet as a set of pods and volume claims.
func zoneSet(ob *Cluster, zone string) workload.Set {
	return workload.Set{Namespace: ob.Namespace, Name: build.StatefulSetName(ob, zone),
		Selector: build.Selector(ob, build.ComponentObserver), Volume: build.DataVolume}
}

// observeLeaving finds the cluster's StatefulSets of zones the spec no
// longer has, and their pods.
func observeLeaving(ctx *Context, cl *cluster) error {
	ob := ctx.Obj
	cl.leaving = map[string]*leavingZone{}
	var sets appsv1.StatefulSetList
	if err := ctx.Client.List(ctx, &sets, client.InNamespace(ob.Namespace),
		client.MatchingLabels(build.Selector(ob, build.ComponentObserver))); err != nil {
		return fmt.Errorf("list the StatefulSets: %w", err)
	}
	for i := range sets.Items {
		sts := &sets.Items[i]
		zone := sts.Labels[build.ZoneLabel]
		if zone == "" || inSpec(ob, zone) || !metav1.IsControlledBy(sts, ob) {
			continue
		}
		pods, err := zoneSet(ob, zone).Pods(ctx, ctx.Client)
		if err != nil {
			return err
		}
		cl.leaving[zone] = &leavingZone{set: sts, pods: pods}
	}
	return nil
}

// serviceAnswerTimeout bounds the probe of an observer's Service.
const serviceAnswerTimeout = time.Second

// newServiceCollector returns the collector of probeServices: an observer
// that does not answer yet is asked again after half a second, then less
// often while it keeps not answering (a partitioned cluster costs a call
// every 30 s per observer); notify enqueues its cluster when it answers.
func newServiceCollector(notify func(string)) *probe.Collector[struct{}] {
	return probe.NewCollector(probe.Options[struct{}]{
		Kind:          "OBCluster",
		CallTimeout:   serviceAnswerTimeout,
		RetryInterval: 500 * time.Millisecond,
		Notify:        notify,
	})
}

// probeServices finds which observers about to be bootstrapped or added
// (ready, and not servers OceanBase knows) do not answer on their
// Service's address yet (cluster.unanswered): a pod is ready once its
// observer listens, and its Service routes to it a moment later, so an ADD
// SERVER sent at once was refused, "server not reachable", with a Warning.
// They are left for a later pass. The calls run in the background
// (services): a pass never waits for an observer that does not answer, so
// a thousand unreachable clusters do not hold the workers.
func (c *Controller) probeServices(ctx *Context, cl *cluster) {
	group := framework.Group(ctx.Obj)
	bootstrapped := ctx.Obj.Status.BootstrappedAt != nil
	if bootstrapped && cl.db == nil {
		return // OceanBase did not answer: nothing is added this pass
	}
	var targets []probe.Target
	for _, zone := range slices.Sorted(maps.Keys(cl.pods)) {
		for o, p := range cl.pods[zone] {
			ip := cl.ips[p.Name]
			switch {
			case ip == "" || !workload.IsReady(p) || p.DeletionTimestamp != nil:
			case !bootstrapped && o != 0:
			case bootstrapped && cl.server(cl.addr(p.Name)) != nil:
			default:
				// A re-created observer (a new UID) is asked at once.
				targets = append(targets, probe.Target{Group: group, Key: p.Name, Revision: string(p.UID),
					Address: net.JoinHostPort(c.opts.Resolve(ip), fmt.Sprint(build.RPCPort))})
			}
		}
	}
	results := c.services.Watch(targets, dialService)
	c.services.Forget(group, targets)
	cl.unanswered = map[string]string{}
	for _, t := range targets {
		if r := results[t.Key]; !r.OK() {
			cl.unanswered[t.Key] = r.Describe()
		}
	}
}

// dialService is the services collector's call: a connection to an
// observer's RPC port on its Service's address, as OceanBase reaches it.
func dialService(ctx context.Context, t probe.Target) (struct{}, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, conn.Close()
}

// observeOceanBase logs in as the operator and reads the servers, the zones
// and the spec's parameters. A failure is reported in status, not
// returned: the pods are still reconciled.
func (c *Controller) observeOceanBase(ctx *Context, cl *cluster) {
	ob := ctx.Obj
	pw, err := framework.ReadPassword(ctx, framework.SecretReader(ctx.Client, ctx.Reader), ob.Namespace, ob.Spec.Credentials.Operator)
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
		cl.drift, err = parameterDrift(ctx, cl.db, ob.Spec.Parameters)
		cl.driftRead = true
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

// connected returns what this pass observed (cl), or an error when
// OceanBase did not answer the operator's login: the steps that change
// OceanBase wait for it.
func connected(cl *cluster) (*cluster, error) {
	switch {
	case cl == nil:
		return nil, errors.New("no cluster was observed in this pass")
	case cl.db != nil:
		return cl, nil
	case cl.err != nil:
		return nil, cl.err
	}
	return nil, errors.New("OceanBase has not answered yet")
}

// addr is the server address of pod name, "" before its Service has an IP.
func (cl *cluster) addr(pod string) string {
	if ip := cl.ips[pod]; ip != "" {
		return net.JoinHostPort(ip, fmt.Sprint(build.RPCPort))
	}
	return ""
}

// pod returns the observer pod name, nil when there is none.
func (cl *cluster) pod(name string) *corev1.Pod {
	for _, pods := range cl.pods {
		for _, p := range pods {
			if p.Name == name {
				return p
			}
		}
	}
	return nil
}

func (cl *cluster) server(addr string) *obsql.Server {
	if s, ok := cl.servers[addr]; ok && addr != "" {
		return &s
	}
	return nil
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

// sys is the sys tenant as this pass read it; nil when OceanBase was not
// read.
func (cl *cluster) sys() *obsql.Tenant {
	for i := range cl.tenants {
		if cl.tenants[i].Type == "SYS" {
			return &cl.tenants[i]
		}
	}
	return nil
}

// joining are the spec's zones that the sys tenant's locality does not
// have yet, in the spec's order: the zones an add-zone flow brings in.
func (cl *cluster) joining(ob *Cluster) []string {
	sys := cl.sys()
	if sys == nil {
		return nil
	}
	have := build.LocalityZones(sys.Locality)
	var out []string
	for _, z := range ob.Spec.Zones {
		if !slices.Contains(have, z.Name) {
			out = append(out, z.Name)
		}
	}
	return out
}

// leavingZones are the zones the spec no longer has that OceanBase, the
// sys tenant's locality or a StatefulSet still has, sorted: the zones a
// remove-zone flow takes out.
func (cl *cluster) leavingZones(ob *Cluster) []string {
	seen := map[string]bool{}
	for z := range cl.zones {
		seen[z] = true
	}
	for z := range cl.leaving {
		seen[z] = true
	}
	if sys := cl.sys(); sys != nil {
		for _, z := range build.LocalityZones(sys.Locality) {
			seen[z] = true
		}
	}
	var out []string
	for _, z := range slices.Sorted(maps.Keys(seen)) {
		if !inSpec(ob, z) {
			out = append(out, z)
		}
	}
	return out
}

// tenantsIn says which user tenants have a replica or a pool in zones.
func (cl *cluster) tenantsIn(zones []string, pools map[string]*obsql.Pool) []string {
	names := map[int64]string{}
	var out []string
	for _, t := range cl.tenants {
		names[t.ID] = t.Name
		if t.Type != "USER" {
			continue
		}
		for _, z := range build.LocalityZones(t.Locality) {
			if slices.Contains(zones, z) {
				out = append(out, fmt.Sprintf("tenant %s has a replica in zone %s (locality %s)", t.Name, z, t.Locality))
			}
		}
	}
	sys := cl.sys()
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		p := pools[name]
		if sys != nil && p.TenantID == sys.ID {
			continue
		}
		for _, z := range p.Zones {
			if !slices.Contains(zones, z) {
				continue
			}
			owner := "no tenant"
			if p.TenantID != 0 {
				owner = "tenant " + names[p.TenantID]
			}
			out = append(out, fmt.Sprintf("resource pool %s (%s) has units in zone %s", p.Name, owner, z))
		}
	}
	return out
}

func inSpec(ob *Cluster, zone string) bool {
	return slices.ContainsFunc(ob.Spec.Zones, func(z obv1.OBZoneSpec) bool { return z.Name == zone })
}

func specZones(ob *Cluster) []string {
	out := make([]string, len(ob.Spec.Zones))
	for i, z := range ob.Spec.Zones {
		out[i] = z.Name
	}
	return out
}
