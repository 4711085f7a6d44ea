//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/systems"
)

// The OBCluster and the OBTenant the lifecycle works on.
const (
	obName   = "ob"
	obTenant = "t1"
)

// OceanBase's specs. OceanBase's observer cannot run here: the observers
// are Steward's observer simulator (images/oceanbase-obsim, obsim, which is
// not OceanBase), spoken to only through OceanBase's interfaces.
func init() {
	registerSystem(systems.OceanBase, systemSpec{
		addToScheme: obv1.AddToScheme,
		smoke:       oceanbaseSmoke,
		specs:       []spec{{"lifecycle", oceanbaseLifecycleSpec}, {"tenant data", oceanbaseDataSpec}},
		chaos:       oceanbaseChaos,
	})
}

// oceanbaseSmoke is OceanBase's smoke: a one-zone cluster of one observer
// bootstrapped and Ready, its servers read over SQL as root through the
// client Service, deleted.
var oceanbaseSmoke = smokeSpec{
	resource: "obcluster", name: obName, ready: 3 * time.Minute,
	manifest: func(t *testing.T, in specInput, ns string) string {
		return fmt.Sprintf(`apiVersion: oceanbase.steward.dev/v1alpha1
kind: OBCluster
metadata: {name: %s, namespace: %s}
spec:
  image: %s
  imagePullPolicy: Never
  zones: [{name: z1, replicas: 1}]
  resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {cpu: 500m, memory: 256Mi}}
  storage: {size: 64Mi, reclaimPolicy: Delete}
`, obName, ns, archiveTags(t, in.archive(t, "oceanbase-obsim"))[0])
	},
	request: func(ns string) error {
		password, err := kubectl("get", "secret", "-n", ns, obName+"-root", "-o", "jsonpath={.data.password}")
		if err != nil {
			return fmt.Errorf("%w: %s", err, password)
		}
		pw, err := base64.StdEncoding.DecodeString(password)
		if err != nil {
			return err
		}
		out, err := execIn(ns, "client", "/smoke", "sql", "--timeout", "8s", "--server", obName+":2881",
			"--user", "root", "--password", string(pw), "SELECT SVR_IP, ZONE, STATUS FROM oceanbase.DBA_OB_SERVERS")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "z1") {
			return fmt.Errorf("DBA_OB_SERVERS has no server in zone z1: %s", out)
		}
		return nil
	},
}

// oceanbaseLifecycleSpec runs one OBCluster through the failures
// ob-operator's users reported, each checked through the API and through
// OceanBase itself (its views, read as root over the MySQL protocol from a
// pod): a 3-zone cluster bootstrapped, a tenant created and its unit
// config changed, a zone scaled out and in with the departing server held
// DELETING while its pod stays (#8), the manager killed while a server is
// DELETING (#155), an observer's pod deleted and its server back, the
// RootService's observer killed (#325), a zone added and its removal held
// while a tenant has it (#248), an observer's store lost and its server
// replaced, a rolling upgrade of the cluster grown to 2-2-2 (#540), and its
// volumes grown. The scenarios build on each other and run in order; the
// first failure stops the rest.
func oceanbaseLifecycleSpec(t *testing.T, in specInput) {
	installOperator(t)
	tags := archiveTags(t, in.archive(t, "oceanbase-obsim"))
	if len(tags) < 2 {
		fatalf(t, "the obsim archive has tags %v; want two, the second for the upgrade", tags)
	}
	o := &obScenario{scenario: newScenario(t, "ob", "obcluster", obName, "observer"), image: tags[0], next: tags[1]}
	o.runSteps(t, o.dumpState, []step{
		{"3 zones bootstrapped", o.create},
		{"a tenant created and its unit config changed", o.tenant},
		{"scale-out and scale-in keep the pod until its server is gone (#8)", o.scale},
		{"the manager killed while a server is DELETING deletes no other (#155)", o.managerKilled},
		{"a deleted observer comes back as the same server", o.podDeleted},
		{"the RootService's observer killed, the operator goes on (#325)", o.rootServiceKilled},
		{"a zone added, its removal held while a tenant has it (#248)", o.zoneRemovalHeld},
		{"an observer's store lost, its server replaced by one at a new address", o.storeLost},
		{"a rolling upgrade of 2-2-2 walks every zone, one at a time (#540)", o.upgrade},
		{"volumes grow, every server stays", o.volumesGrow},
	})
}

// obScenario is the state the scenarios share.
type obScenario struct {
	scenario
	image, next  string // the observers' image, and the one to upgrade to
	rootPassword string
	// via is the observer's Service the SQL goes through; empty, the
	// client Service, which balances over the ready observers.
	via string
}

func (o *obScenario) create(t *testing.T) {
	start := time.Now()
	cluster := &obv1.OBCluster{
		ObjectMeta: metav1.ObjectMeta{Name: obName, Namespace: o.ns},
		Spec: obv1.OBClusterSpec{
			Image:           o.image,
			ImagePullPolicy: corev1.PullNever,
			Zones:           []obv1.OBZoneSpec{{Name: "z1", Replicas: 1}, {Name: "z2", Replicas: 1}, {Name: "z3", Replicas: 1}},
			// obsim is light: small requests leave room for the other
			// systems' pods on the one real node.
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			Storage:    commonv1.StorageSpec{Size: ptr.To(resource.MustParse("64Mi")), ReclaimPolicy: commonv1.ReclaimDelete},
			Parameters: []obv1.Parameter{{Name: "syslog_level", Value: "INFO"}},
		},
	}
	if err := o.c.Create(context.Background(), cluster); err != nil {
		fatalNow(t, err)
	}
	o.startClient()
	ob := o.waitReady(3, 3*time.Minute)
	t.Logf("Ready with 3 servers after %s; RootService %s", time.Since(start).Round(time.Second), ob.Status.RootService)
	o.rootPassword = o.secret(obName + "-root")
	servers := o.waitServers(3)
	for _, s := range ob.Status.Servers {
		// The server's address is its own Service's IP: it outlives the
		// pod (service mode).
		svc, err := env.client.CoreV1().Services(o.ns).Get(context.Background(), s.Pod, metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		if want := svc.Spec.ClusterIP + ":2882"; s.Address != want || servers[want].zone != s.Zone {
			errorf(t, "server %s: address %s (its Service's IP gives %s), in OceanBase's zone %q", s.Pod, s.Address, want, servers[want].zone)
		}
	}
	if rs := rootService(servers); rs != ob.Status.RootService {
		errorf(t, "status.rootService %s, OceanBase says %s", ob.Status.RootService, rs)
	}
	if v := o.parameter("syslog_level"); !allEqual(v, "INFO", 3) {
		errorf(t, "syslog_level on the servers: %v, want INFO on 3", v)
	}
	out, err := kubectl("get", "obc", "-n", o.ns, "-o", "wide")
	if err != nil || !strings.Contains(out, "True") {
		errorf(t, "kubectl get obc: %v\n%s", err, out)
	}
	t.Logf("kubectl get obc -o wide:\n%s", out)
}

// tenant creates a tenant in every zone, logs in to it as its root, and
// changes its unit config.
func (o *obScenario) tenant(t *testing.T) {
	start := time.Now()
	tenant := &obv1.OBTenant{
		ObjectMeta: metav1.ObjectMeta{Name: obTenant, Namespace: o.ns},
		Spec: obv1.OBTenantSpec{
			Cluster:       obName,
			Unit:          obv1.OBUnitConfig{MaxCPU: resource.MustParse("1"), MemorySize: resource.MustParse("5Gi")},
			Zones:         []obv1.OBTenantZone{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
			ReclaimPolicy: commonv1.ReclaimDelete,
		},
	}
	if err := o.c.Create(context.Background(), tenant); err != nil {
		fatalNow(t, err)
	}
	tn := o.waitTenantReady(2 * time.Minute)
	t.Logf("Tenant %s NORMAL (id %d, locality %s) after %s", obTenant, tn.Status.TenantID, tn.Status.Locality, time.Since(start).Round(time.Second))
	rows := o.query(fmt.Sprintf("SELECT STATUS, LOCALITY FROM oceanbase.DBA_OB_TENANTS WHERE TENANT_NAME = '%s'", obTenant))
	if len(rows) != 1 || rows[0][0] != "NORMAL" || strings.Count(rows[0][1], "FULL{1}@") != 3 {
		errorf(t, "DBA_OB_TENANTS: %v, want NORMAL with a full replica in 3 zones", rows)
	}
	password := o.secret(obTenant + "-root")
	if rows, err := o.sqlAs("root@"+obTenant, password, "SELECT 1"); err != nil || len(rows) != 1 || rows[0][0] != "1" {
		errorf(t, "root@%s cannot log in with its Secret's password: %v %v", obTenant, rows, err)
	}
	if _, err := o.sqlAs("root@"+obTenant, password+"x", "SELECT 1"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		errorf(t, "root@%s logs in with a wrong password: %v", obTenant, err)
	}

	start = time.Now()
	o.patchTenant(`{"spec":{"unit":{"maxCPU":"2","memorySize":"6Gi"}}}`)
	o.waitTenantReady(time.Minute)
	rows = o.query(fmt.Sprintf("SELECT MAX_CPU, MEMORY_SIZE FROM oceanbase.DBA_OB_UNIT_CONFIGS WHERE NAME = '%s_unit'", obTenant))
	if len(rows) != 1 || parseFloat(rows[0][0]) != 2 || rows[0][1] != strconv.FormatInt(6<<30, 10) {
		errorf(t, "DBA_OB_UNIT_CONFIGS: %v, want MAX_CPU 2 and MEMORY_SIZE 6Gi", rows)
	}
	t.Logf("Unit config altered in %s", time.Since(start).Round(time.Second))
}

// scale grows zone z1 to two observers and back to one. OceanBase is made
// to hold the departing server DELETING (obsim's hangDelete knob, as when
// its units have nowhere to go): while it does, the pod stays; once the
// server is let go, the pod goes, never before (ob-operator #8).
func (o *obScenario) scale(t *testing.T) {
	before := o.waitServers(3)
	start := time.Now()
	o.setReplicas(2, 1, 1)
	o.waitReady(4, 2*time.Minute)
	after := o.waitServers(4)
	departing := o.address(obName + "-z1-1")
	if s, ok := after[departing]; !ok || s.zone != "z1" {
		fatalf(t, "OceanBase does not list %s-z1-1 (%s) in z1: %v", obName, departing, after)
	}
	t.Logf("Scaled z1 out to 2 in %s", time.Since(start).Round(time.Second))

	o.scaleInHeld(departing, "z1", nil)
	t.Logf("Scaled z1 in to 1 in %s", time.Since(start).Round(time.Second))
	o.expectServers(before)
}

// scaleInHeld scales the zone back to one observer while OceanBase holds
// the departing server DELETING, checks the pod stays, runs during (which
// may kill the manager), then lets OceanBase finish and checks the pod goes
// only after OceanBase forgot the server, and its volume claim with it.
func (o *obScenario) scaleInHeld(departing, zone string, during func()) {
	t := o.t
	pod := obName + "-" + zone + "-1"
	o.knobs(`{"hangDelete":true}`)
	released := false
	release := func() {
		if !released {
			o.knobs(`{"hangDelete":false}`)
			released = true
		}
	}
	defer release()
	o.setReplicas(1, 1, 1)
	eventually(t, time.Minute, "OceanBase is deleting the server", func(context.Context) error {
		if s := o.servers()[departing]; s.status != "DELETING" {
			return fmt.Errorf("%s is %q", departing, s.status)
		}
		return nil
	})
	held := time.Now()
	// While OceanBase holds the server, the flow waits, the pod stays, and
	// no other server is touched.
	check := func(what string) {
		servers := o.servers()
		deleting := 0
		for addr, s := range servers {
			switch {
			case s.status == "DELETING" && addr == departing:
				deleting++
			case s.status != "ACTIVE":
				errorf(t, "%s: server %s is %s", what, addr, s.status)
			}
		}
		if deleting != 1 || len(servers) != 4 {
			errorf(t, "%s: OceanBase lists %d servers, %s %q; want 4 with only it deleting", what, len(servers), departing, servers[departing].status)
		}
		p, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			fatalf(t, "%s: the pod of %s, a server OceanBase still lists, is going: %v", what, departing, err)
		}
	}
	for time.Since(held) < 6*time.Second {
		check("held")
		time.Sleep(time.Second)
	}
	if op := o.get().Status.Operation; op == nil || op.Name != "scale-in" || op.Step != "wait-servers-deleted" || !strings.Contains(op.Message, "DELETING") {
		errorf(t, "status.operation: %+v, want scale-in waiting in wait-servers-deleted, saying the server is DELETING", op)
	}
	if during != nil {
		during()
		check("after the manager restarted")
	}
	release()
	// The pod is read before OceanBase each time: a pod seen going while
	// a later read of OceanBase still lists the server went too early.
	var podGoneAt time.Time
	eventually(t, 2*time.Minute, "the server and then its pod are gone", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(o.ns).Get(ctx, pod, metav1.GetOptions{})
		gone := apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil
		if gone && podGoneAt.IsZero() {
			podGoneAt = time.Now()
		}
		s, listed := o.servers()[departing]
		if gone && listed {
			fatalf(t, "the pod %s went while OceanBase still listed its server %s (%s)", pod, departing, s.status)
		}
		switch {
		case listed:
			return fmt.Errorf("OceanBase still lists %s (%s)", departing, s.status)
		case err == nil:
			return fmt.Errorf("the pod %s is still there", pod)
		case !apierrors.IsNotFound(err):
			return err
		}
		return nil
	})
	t.Logf("OceanBase held %s for %s; then the server went, then its pod", departing, time.Since(held).Round(time.Second))
	o.waitReady(3, 2*time.Minute)
	o.waitPods(3)
	eventually(t, time.Minute, "the departed server's volume claim is deleted", func(ctx context.Context) error {
		claim := build.DataVolume + "-" + pod
		_, err := env.client.CoreV1().PersistentVolumeClaims(o.ns).Get(ctx, claim, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("claim %s is still there", claim)
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// managerKilled grows z2 to two observers and back, and kills the leading
// manager replica while OceanBase holds the departing server DELETING: the
// manager that takes over must go on waiting for that server, delete no
// other (ob-operator #155), and finish once OceanBase lets it go.
func (o *obScenario) managerKilled(t *testing.T) {
	before := o.waitServers(3)
	o.setReplicas(1, 2, 1)
	o.waitReady(4, 2*time.Minute)
	o.waitServers(4)
	departing := o.address(obName + "-z2-1")
	o.scaleInHeld(departing, "z2", func() {
		killed := killLeader(t)
		start := time.Now()
		eventually(t, time.Minute, "another manager replica leads", func(context.Context) error {
			if _, pod := leaseHolder(t); pod == "" || pod == killed {
				return fmt.Errorf("the Lease is held by %q", pod)
			}
			return nil
		})
		_, leader := leaseHolder(t)
		t.Logf("Killed the manager %s; %s leads after %s", killed, leader, time.Since(start).Round(time.Second))
		// The new leader reconciles every cluster as it starts; a few
		// passes go by while OceanBase still holds the server.
		time.Sleep(8 * time.Second)
	})
	o.expectServers(before)
}

// notRootService is an observer of ob that does not run the RootService:
// its pod and its server's address.
func notRootService(ob *obv1.OBCluster) (pod, addr string) {
	for _, s := range ob.Status.Servers {
		if s.Address != ob.Status.RootService {
			return s.Pod, s.Address
		}
	}
	return "", ""
}

// podDeleted deletes an observer's pod that does not run the RootService:
// the pod comes back on its volume, behind its Service, and OceanBase sees
// the same server (same address, no new server) start serving again, with
// a new start_service_time.
func (o *obScenario) podDeleted(t *testing.T) {
	ob := o.waitReady(3, time.Minute)
	before := o.waitServers(3)
	pod, addr := notRootService(ob)
	// Ask the RootService's observer: through the client Service a query
	// could go to the deleted pod and hang past the window in which
	// OceanBase shows the server out of service (a CI run missed it so).
	for _, s := range ob.Status.Servers {
		if s.Address == ob.Status.RootService {
			o.via = s.Pod
		}
	}
	defer func() { o.via = "" }()
	old, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	// A restarted observer takes a while to serve again; obsim's second by
	// default could fall between two reads of DBA_OB_SERVERS.
	o.knobs(`{"startServiceDelay":"5s"}`)
	defer o.knobs(`{"startServiceDelay":"1s"}`)
	start := time.Now()
	if out, err := kubectl("delete", "pod", "-n", o.ns, pod, "--wait=false"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	var seen []string
	eventually(t, 2*time.Minute, "the server serves again with a new start time", func(ctx context.Context) error {
		s, ok := o.servers()[addr]
		state := "absent"
		if ok {
			state = s.status
			if s.startService == "NULL" {
				state += " (not serving)"
			}
		}
		if len(seen) == 0 || seen[len(seen)-1] != state {
			seen = append(seen, state)
		}
		p, err := env.client.CoreV1().Pods(o.ns).Get(ctx, pod, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case p.UID == old.UID:
			return fmt.Errorf("the pod is not re-created yet")
		case !ok || s.status != "ACTIVE" || s.startService == "NULL" || s.startService == before[addr].startService:
			return fmt.Errorf("server %s: %+v", addr, s)
		}
		return nil
	})
	t.Logf("%s came back in %s; OceanBase listed %s as %v", pod, time.Since(start).Round(time.Second), addr, seen)
	if !slices.ContainsFunc(seen, func(s string) bool { return s == "INACTIVE" || strings.HasSuffix(s, "(not serving)") }) {
		errorf(t, "OceanBase never showed %s out of service: %v", addr, seen)
	}
	o.waitReady(3, 2*time.Minute)
	o.expectServers(before)
	if got := o.address(pod); got != addr {
		errorf(t, "%s came back as %s, was %s", pod, got, addr)
	}
}

// rootServiceKilled kills the observer that runs the RootService. It is
// frozen first (SIGSTOP: it keeps its sockets and answers nothing, as a
// hung observer does) until the other servers have elected another
// RootService, then killed (SIGKILL; its container starts again as a
// member). The operator, whose login may have gone through that observer,
// goes on: a parameter changed afterwards is set on every server
// (ob-operator #325 stopped reconciling for good).
func (o *obScenario) rootServiceKilled(t *testing.T) {
	ob := o.waitReady(3, time.Minute)
	rs := ob.Status.RootService
	var pod string
	for _, s := range ob.Status.Servers {
		if s.Address == rs {
			pod = s.Pod
		} else {
			// A frozen observer still accepts connections (the kernel
			// does), and its pod stays ready: the client Service would
			// send some of the test's queries to it.
			o.via = s.Pod
		}
	}
	defer func() { o.via = "" }()
	p, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	start := time.Now()
	signalContainer(t, *p, "SIGSTOP")
	killed := false
	defer func() {
		if !killed {
			signalContainer(t, *p, "SIGKILL")
		}
	}()
	var next string
	eventually(t, time.Minute, "another server runs the RootService", func(context.Context) error {
		if next = rootService(o.servers()); next == "" || next == rs {
			return fmt.Errorf("the RootService is on %q", next)
		}
		return nil
	})
	signalContainer(t, *p, "SIGKILL")
	killed = true
	t.Logf("Froze %s (%s); OceanBase moved the RootService to %s after %s; killed it", pod, rs, next, time.Since(start).Round(time.Second))
	o.patch(`{"spec":{"parameters":[{"name":"syslog_level","value":"DEBUG"}]}}`)
	ob = o.waitReady(3, 2*time.Minute)
	if v := o.parameter("syslog_level"); !allEqual(v, "DEBUG", 3) {
		errorf(t, "syslog_level on the servers: %v, want DEBUG on 3", v)
	}
	if now := rootService(o.servers()); ob.Status.RootService != now || now == rs {
		errorf(t, "status.rootService %s; it was %s, OceanBase says %s", ob.Status.RootService, rs, now)
	}
	after, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil || after.Status.ContainerStatuses[0].RestartCount == 0 {
		errorf(t, "the killed observer's container did not restart: %v", err)
	}
	t.Logf("The parameter set and the cluster Ready %s after the freeze", time.Since(start).Round(time.Second))
}

// zoneRemovalHeld adds a zone z4 and puts the tenant in it, then removes
// z4 from the cluster: the removal holds while the tenant has the zone,
// z4's observer still there and still OceanBase's server (ob-operator #248
// deleted the zone's servers under the tenant's replicas), and finishes
// once the tenant leaves it.
func (o *obScenario) zoneRemovalHeld(t *testing.T) {
	o.waitReady(3, time.Minute)
	start := time.Now()
	o.patch(`{"spec":{"zones":[{"name":"z1","replicas":1},{"name":"z2","replicas":1},{"name":"z3","replicas":1},{"name":"z4","replicas":1}]}}`)
	o.waitReady(4, 3*time.Minute)
	o.waitServers(4)
	if z := o.zones(); z["z4"] != "ACTIVE" {
		fatalf(t, "DBA_OB_ZONES: %v, want z4 ACTIVE", z)
	}
	t.Logf("Added z4 in %s", time.Since(start).Round(time.Second))

	start = time.Now()
	o.patchTenant(`{"spec":{"zones":[{"name":"z1"},{"name":"z2"},{"name":"z3"},{"name":"z4"}]}}`)
	if tn := o.waitTenantReady(2 * time.Minute); !strings.Contains(tn.Status.Locality, "@z4") {
		fatalf(t, "the tenant's locality %q has no replica in z4", tn.Status.Locality)
	}
	t.Logf("The tenant joined z4 in %s", time.Since(start).Round(time.Second))

	start = time.Now()
	pod := obName + "-z4-0"
	addr := o.address(pod)
	o.setReplicas(1, 1, 1)
	held := func(ctx context.Context) error {
		ob := o.get()
		ready := meta.FindStatusCondition(ob.Status.Conditions, "Ready")
		switch {
		case ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "ZoneRemovalHeld":
			return fmt.Errorf("Ready: %+v", ready)
		case ob.Status.Operation == nil || ob.Status.Operation.Message == "":
			return fmt.Errorf("operation: %+v", ob.Status.Operation)
		}
		if _, err := env.client.CoreV1().Pods(o.ns).Get(ctx, pod, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("z4's pod: %w", err)
		}
		if s, ok := o.servers()[addr]; !ok || s.zone != "z4" {
			return fmt.Errorf("OceanBase no longer lists z4's server %s", addr)
		}
		return nil
	}
	eventually(t, time.Minute, "the removal of z4 is held", held)
	// A few passes go by: it stays held.
	time.Sleep(5 * time.Second)
	if err := held(context.Background()); err != nil {
		fatalf(t, "the removal of z4 is no longer held while the tenant has it: %v", err)
	}
	ob := o.get()
	t.Logf("Removal of z4 held after %s: %s", time.Since(start).Round(time.Second), ob.Status.Operation.Message)

	start = time.Now()
	o.patchTenant(`{"spec":{"zones":[{"name":"z1"},{"name":"z2"},{"name":"z3"}]}}`)
	o.waitTenantReady(2 * time.Minute)
	o.waitReady(3, 3*time.Minute)
	if z := o.zones(); len(z) != 3 || z["z4"] != "" {
		errorf(t, "DBA_OB_ZONES: %v, want z1, z2 and z3", z)
	}
	eventually(t, time.Minute, "z4's StatefulSet is gone", func(ctx context.Context) error {
		_, err := env.client.AppsV1().StatefulSets(o.ns).Get(ctx, obName+"-z4", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.New("still there")
	})
	if s, ok := o.waitServers(3)[addr]; ok {
		errorf(t, "OceanBase still lists z4's server %s: %+v", addr, s)
	}
	t.Logf("z4 removed %s after the tenant left it", time.Since(start).Round(time.Second))
}

// storeLost deletes an observer's volume claim with its pod (the claim is
// protected while the pod exists: the claim first, then the pod; the
// StatefulSet makes both anew). The observer starts empty at the address
// of a server OceanBase still lists: the recover flow gives it a new
// address (its Service's new IP), adds it, and deletes the lost server:
// exactly one new server, at the Service's new address. The observer is
// one that does not run the RootService.
func (o *obScenario) storeLost(t *testing.T) {
	ob := o.waitReady(3, time.Minute)
	before := o.waitServers(3)
	pod, addr := notRootService(ob)
	p, err := env.client.CoreV1().Pods(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	var claim string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim == "" {
		fatalf(t, "pod %s has no volume claim", pod)
	}
	start := time.Now()
	for _, args := range [][]string{{"pvc", claim}, {"pod", pod}} {
		if out, err := kubectl("delete", args[0], "-n", o.ns, args[1], "--wait=false"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	}
	var steps []string
	var lost []obv1.OBLostServer
	eventually(t, 2*time.Minute, "the recover flow starts", func(context.Context) error {
		ob := o.get()
		if len(ob.Status.LostServers) > 0 {
			lost = ob.Status.LostServers
		}
		if op := ob.Status.Operation; op == nil || op.Name != "recover" {
			return fmt.Errorf("operation %+v", op)
		}
		return nil
	})
	t.Logf("Recover flow started after %s", time.Since(start).Round(time.Second))
	seen := map[string]bool{}
	eventually(t, 3*time.Minute, "the lost server replaced", func(context.Context) error {
		ob := o.get()
		if op := ob.Status.Operation; op != nil && op.Step != "" && (len(steps) == 0 || steps[len(steps)-1] != op.Step) {
			steps = append(steps, op.Step)
		}
		if len(ob.Status.LostServers) > 0 {
			lost = ob.Status.LostServers
		}
		servers := o.servers()
		for a := range servers {
			seen[a] = true
		}
		if _, ok := servers[addr]; ok {
			return fmt.Errorf("OceanBase still lists the lost server %s", addr)
		}
		for _, s := range ob.Status.Servers {
			if s.Pod == pod && (s.Address == addr || servers[s.Address].status != "ACTIVE") {
				return fmt.Errorf("server of %s: %s, %+v", pod, s.Address, servers[s.Address])
			}
		}
		return nil
	})
	ob = o.waitReady(3, 2*time.Minute)
	t.Logf("%s replaced in %s; flow steps %v; status.lostServers was %+v", addr, time.Since(start).Round(time.Second), steps, lost)
	// Sampled once a second (with a SQL query each), a recovery of a few
	// seconds may end between two samples: the StoresLost Event, recorded
	// by the status write that listed the server, is the evidence then.
	if len(lost) == 0 && !o.eventSays("StoresLost is True: lost stores: "+addr) {
		errorf(t, "neither status.lostServers nor a StoresLost Event ever listed %s", addr)
	}
	if c := meta.FindStatusCondition(ob.Status.Conditions, "StoresLost"); c == nil || c.Status != metav1.ConditionFalse {
		errorf(t, "StoresLost: %+v", c)
	}
	svc, err := env.client.CoreV1().Services(o.ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	now := o.address(pod)
	if want := svc.Spec.ClusterIP + ":2882"; now != want || now == addr {
		errorf(t, "%s's server at %s, its Service's IP gives %s, the lost one was %s", pod, now, want, addr)
	}
	after := o.waitServers(3)
	for a := range before {
		if _, ok := after[a]; !ok && a != addr {
			errorf(t, "server %s is gone; OceanBase lists %v", a, after)
		}
	}
	var added []string
	for a := range seen {
		if _, ok := before[a]; !ok {
			added = append(added, a)
		}
	}
	if len(added) != 1 {
		errorf(t, "OceanBase listed %d new servers during the flow, want 1: %v", len(added), added)
	}
}

// upgrade grows the cluster to two observers per zone and the tenant to
// two units per zone, then moves to the next image: every observer of
// every zone must end on it, the zones stopped one at a time in the spec's
// order (ob-operator #540 upgraded one zone of three).
func (o *obScenario) upgrade(t *testing.T) {
	start := time.Now()
	o.setReplicas(2, 2, 2)
	o.waitReady(6, 2*time.Minute)
	o.waitServers(6)
	o.patchTenant(`{"spec":{"unitNum":2}}`)
	o.waitTenantReady(time.Minute)
	rows := o.query("SELECT NAME, UNIT_COUNT FROM oceanbase.DBA_OB_RESOURCE_POOLS WHERE NAME LIKE '" + obTenant + "_pool_%'")
	if len(rows) != 3 || slices.ContainsFunc(rows, func(r []string) bool { return r[1] != "2" }) {
		errorf(t, "the tenant's pools: %v, want 3 with 2 units each", rows)
	}
	t.Logf("2-2-2, the tenant with 2 units per zone, after %s", time.Since(start).Round(time.Second))

	start = time.Now()
	o.patch(fmt.Sprintf(`{"spec":{"image":%q}}`, o.next))
	var stopped []string // the zones seen stopped, in order
	var ob *obv1.OBCluster
	eventually(t, 4*time.Minute, "every observer runs "+o.next+" and the cluster is Ready", func(context.Context) error {
		// Each source is one instant: status as the operator last saw
		// OceanBase, DBA_OB_ZONES now. Neither may show two zones down.
		ob = o.get()
		var inStatus, inOceanBase []string
		for _, z := range ob.Status.Zones {
			if z.Status == "INACTIVE" {
				inStatus = append(inStatus, z.Name)
			}
		}
		if rows, err := o.sqlAs("root", o.rootPassword, "SELECT ZONE, STATUS FROM oceanbase.DBA_OB_ZONES"); err == nil {
			for _, r := range rows {
				if r[1] == "INACTIVE" {
					inOceanBase = append(inOceanBase, r[0])
				}
			}
		}
		if len(inStatus) > 1 || len(inOceanBase) > 1 {
			fatalf(t, "zones down at once: %v in status, %v in DBA_OB_ZONES", inStatus, inOceanBase)
		}
		for _, z := range append(inStatus, inOceanBase...) {
			if !slices.Contains(stopped, z) {
				stopped = append(stopped, z)
			}
		}
		ready := meta.FindStatusCondition(ob.Status.Conditions, "Ready")
		switch {
		case ob.Status.ObservedGeneration != ob.Generation || ready == nil || ready.Status != metav1.ConditionTrue:
			return fmt.Errorf("not Ready: %+v", ready)
		case ob.Status.Operation != nil && ob.Status.Operation.Phase.Active():
			return fmt.Errorf("operation %s at %s: %s", ob.Status.Operation.Name, ob.Status.Operation.Step, ob.Status.Operation.Message)
		case ob.Status.Image != o.next || ob.Status.ActiveServers != 6:
			return fmt.Errorf("image %s, %d servers active", ob.Status.Image, ob.Status.ActiveServers)
		}
		return nil
	})
	// Sampled once a second, a zone that stops and starts within a second
	// may go unseen (a busy machine stretches the samples): the order is
	// the operator's UpgradingZone Events', and what the samples saw must
	// agree with it.
	order := o.zonesUpgraded()
	t.Logf("Upgraded to %s in %s; zones stopped in order %v (seen stopped: %v)", o.next, time.Since(start).Round(time.Second), order, stopped)
	if !slices.Equal(order, []string{"z1", "z2", "z3"}) {
		errorf(t, "zones stopped %v, want z1, z2, z3 one after the other", order)
	}
	if !inOrder(stopped, order) {
		errorf(t, "zones seen stopped in order %v, which the Events' order %v does not have", stopped, order)
	}
	if op := ob.Status.Operation; op == nil || op.Name != "upgrade" || op.Phase != commonv1.PhaseSucceeded {
		errorf(t, "status.operation: %+v, want a succeeded upgrade", op)
	}
	pods, err := env.client.CoreV1().Pods(o.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=observer"})
	if err != nil {
		fatalNow(t, err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; img != o.next || !podReady(&p) {
			errorf(t, "pod %s runs %s (ready %v), want %s", p.Name, img, podReady(&p), o.next)
		}
	}
	if len(pods.Items) != 6 {
		errorf(t, "%d observer pods, want 6", len(pods.Items))
	}
	o.waitServers(6)
	for _, r := range o.query("SELECT ZONE, STATUS FROM oceanbase.DBA_OB_ZONES") {
		if r[1] != "ACTIVE" {
			errorf(t, "zone %s is %s after the upgrade", r[0], r[1])
		}
	}
	// Each obsim image reports its own version (images/oceanbase-obsim):
	// the servers run the new one, not only the pods name its image.
	for _, r := range o.query("SELECT SVR_IP, BUILD_VERSION FROM oceanbase.DBA_OB_SERVERS") {
		if !strings.HasPrefix(r[1], obsimRelease(o.next)+"_") {
			errorf(t, "server %s reports build_version %s after the upgrade to %s", r[0], r[1], o.next)
		}
	}
	o.waitTenantReady(time.Minute)
}

// obsimRelease is the OceanBase release an obsim image reports
// (images/oceanbase-obsim/build.sh): 4.3.5.2 for tag 1.1, else 4.3.5.1.
func obsimRelease(image string) string {
	if strings.HasSuffix(image, ":1.1") {
		return "4.3.5.2"
	}
	return "4.3.5.1"
}

// waitReady waits until the cluster is Ready at its generation with
// servers servers serving and no operation running.
// volumesGrow grows the observers' volumes (scenario.volumesGrow): no
// observer restarts, and OceanBase still has all six servers.
func (o *obScenario) volumesGrow(t *testing.T) {
	o.scenario.volumesGrow(t, volumeGrowth{
		sizePatch: storageSize,
		smaller:   "32Mi",
		larger:    "128Mi",
		selector:  instanceSelector("oceanbase", obName),
		waitReady: func() { o.waitReady(6, 2*time.Minute) },
	})
	o.waitServers(6)
}

func (o *obScenario) waitReady(servers int32, timeout time.Duration) *obv1.OBCluster {
	o.t.Helper()
	var ob *obv1.OBCluster
	eventually(o.t, timeout, fmt.Sprintf("the cluster is Ready with %d servers", servers), func(context.Context) error {
		ob = o.get()
		st := ob.Status
		if err := settled(ob.Generation, &st.StatusCore); err != nil {
			return err
		}
		if st.ActiveServers != servers || len(st.Servers) != int(servers) {
			return fmt.Errorf("%d servers active, %d in status", st.ActiveServers, len(st.Servers))
		}
		return nil
	})
	return ob
}

func (o *obScenario) get() *obv1.OBCluster {
	ob := &obv1.OBCluster{}
	o.getInto(ob)
	return ob
}

// eventSays reports whether an Event of the cluster has a message
// containing text.
func (o *obScenario) eventSays(text string) bool {
	o.t.Helper()
	var events corev1.EventList
	if err := o.c.List(context.Background(), &events, client.InNamespace(o.ns)); err != nil {
		fatalNow(o.t, err)
	}
	return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name == obName && strings.Contains(e.Message, text)
	})
}

// inOrder reports whether every element of sub appears in of, in the same
// order (sub is a subsequence of of).
func inOrder(sub, of []string) bool {
	i := 0
	for _, x := range sub {
		for i < len(of) && of[i] != x {
			i++
		}
		if i == len(of) {
			return false
		}
		i++
	}
	return true
}

// zonesUpgraded returns the zones an upgrade stopped, in the order of the
// operator's UpgradingZone Events ("Stopping zone z1 to run ...").
func (o *obScenario) zonesUpgraded() []string {
	o.t.Helper()
	var events corev1.EventList
	if err := o.c.List(context.Background(), &events, client.InNamespace(o.ns)); err != nil {
		fatalNow(o.t, err)
	}
	var upgrading []corev1.Event
	for _, e := range events.Items {
		if e.Reason == obv1.EventUpgradingZone && e.InvolvedObject.Name == obName {
			upgrading = append(upgrading, e)
		}
	}
	at := func(e corev1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.FirstTimestamp.Time
	}
	slices.SortStableFunc(upgrading, func(a, b corev1.Event) int { return at(a).Compare(at(b)) })
	var zones []string
	for _, e := range upgrading {
		if f := strings.Fields(e.Message); len(f) > 2 && f[0] == "Stopping" && f[1] == "zone" {
			zones = append(zones, f[2])
		}
	}
	// A step that runs again repeats its Event (aggregated or not): one
	// zone stopped once.
	return slices.Compact(zones)
}

// setReplicas sets the observers of zones z1, z2 and z3.
func (o *obScenario) setReplicas(z1, z2, z3 int) {
	o.patch(fmt.Sprintf(`{"spec":{"zones":[{"name":"z1","replicas":%d},{"name":"z2","replicas":%d},{"name":"z3","replicas":%d}]}}`, z1, z2, z3))
}

// address is pod's server address as status lists it.
func (o *obScenario) address(pod string) string {
	o.t.Helper()
	for _, s := range o.get().Status.Servers {
		if s.Pod == pod {
			return s.Address
		}
	}
	fatalf(o.t, "status lists no server for pod %s", pod)
	return ""
}

// waitTenantReady waits until the tenant is Ready and NORMAL at its
// generation, with no operation running.
func (o *obScenario) waitTenantReady(timeout time.Duration) *obv1.OBTenant {
	o.t.Helper()
	var tn *obv1.OBTenant
	eventually(o.t, timeout, "the tenant is Ready", func(ctx context.Context) error {
		tn = &obv1.OBTenant{}
		if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: obTenant}, tn); err != nil {
			return err
		}
		st := tn.Status
		if err := settled(tn.Generation, &st.StatusCore); err != nil {
			return err
		}
		if st.TenantStatus != "NORMAL" {
			return fmt.Errorf("tenant %q", st.TenantStatus)
		}
		return nil
	})
	return tn
}

func (o *obScenario) patchTenant(patch string) {
	o.t.Helper()
	if out, err := kubectl("patch", "obtenant", obTenant, "-n", o.ns, "--type", "merge", "-p", patch); err != nil {
		fatalf(o.t, "%v: %s", err, out)
	}
}

// secret reads a Secret's password.
func (o *obScenario) secret(name string) string {
	o.t.Helper()
	s, err := env.client.CoreV1().Secrets(o.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fatalNow(o.t, err)
	}
	return string(s.Data["password"])
}

// obServer is a row of DBA_OB_SERVERS.
type obServer struct {
	zone, status, startService string // startService: NULL while not serving
	rootService                bool
}

// servers reads DBA_OB_SERVERS, by address (ip:port), retrying while
// OceanBase does not answer.
func (o *obScenario) servers() map[string]obServer {
	o.t.Helper()
	rows := o.query("SELECT SVR_IP, SVR_PORT, ZONE, STATUS, START_SERVICE_TIME, WITH_ROOTSERVER FROM oceanbase.DBA_OB_SERVERS")
	out := map[string]obServer{}
	for _, r := range rows {
		if len(r) == 6 {
			out[r[0]+":"+r[1]] = obServer{zone: r[2], status: r[3], startService: r[4], rootService: r[5] == "YES"}
		}
	}
	return out
}

// waitServers waits until OceanBase lists exactly the servers status does,
// n of them, each ACTIVE and serving in its zone, and returns them.
func (o *obScenario) waitServers(n int) map[string]obServer {
	o.t.Helper()
	var servers map[string]obServer
	eventually(o.t, time.Minute, fmt.Sprintf("OceanBase lists %d servers, ACTIVE and serving", n), func(context.Context) error {
		servers = o.servers()
		if len(servers) != n {
			return fmt.Errorf("DBA_OB_SERVERS: %v", servers)
		}
		for _, s := range o.get().Status.Servers {
			got, ok := servers[s.Address]
			if !ok || got.zone != s.Zone || got.status != "ACTIVE" || got.startService == "NULL" {
				return fmt.Errorf("server %s (%s): %+v", s.Address, s.Pod, got)
			}
		}
		return nil
	})
	return servers
}

// expectServers checks that OceanBase lists the addresses of want, each
// ACTIVE, and no other.
func (o *obScenario) expectServers(want map[string]obServer) {
	o.t.Helper()
	got := o.waitServers(len(want))
	for addr := range want {
		if _, ok := got[addr]; !ok {
			errorf(o.t, "server %s is gone; OceanBase lists %v", addr, got)
		}
	}
}

// rootService is the server that runs the RootService, "" when none.
func rootService(servers map[string]obServer) string {
	for addr, s := range servers {
		if s.rootService {
			return addr
		}
	}
	return ""
}

// zones reads DBA_OB_ZONES: each zone's status.
func (o *obScenario) zones() map[string]string {
	out := map[string]string{}
	for _, r := range o.query("SELECT ZONE, STATUS FROM oceanbase.DBA_OB_ZONES") {
		if len(r) == 2 {
			out[r[0]] = r[1]
		}
	}
	return out
}

// parameter reads a cluster parameter's value on each server.
func (o *obScenario) parameter(name string) []string {
	var values []string
	for _, r := range o.query("SELECT SVR_IP, VALUE FROM oceanbase.GV$OB_PARAMETERS WHERE NAME = '" + name + "'") {
		values = append(values, r[1])
	}
	return values
}

func allEqual(values []string, want string, n int) bool {
	return len(values) == n && !slices.ContainsFunc(values, func(v string) bool { return v != want })
}

// query runs query as root in the sys tenant, retrying while OceanBase does
// not answer.
func (o *obScenario) query(query string) [][]string {
	o.t.Helper()
	var rows [][]string
	eventually(o.t, 30*time.Second, query, func(context.Context) error {
		var err error
		rows, err = o.sqlAs("root", o.rootPassword, query)
		return err
	})
	return rows
}

// sqlAs runs query as user (user@tenant) through the client Service, with
// a MySQL client in the client pod, and returns the rows.
func (o *obScenario) sqlAs(user, password, query string) ([][]string, error) {
	via := o.via
	if via == "" {
		via = obName
	}
	out, err := kubectl("exec", "-n", o.ns, "client", "--", "/smoke", "sql", "--timeout", "8s",
		"--server", via+":2881", "--user", user, "--password", password, query)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var rows [][]string
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows, nil
}

// knobs sets the knobs of every observer's simulator (its control
// endpoint on the RPC port, through its Service): the RootService acts on
// them, and it may move. An observer that went meanwhile (the knob let
// OceanBase delete it) is skipped.
func (o *obScenario) knobs(patch string) {
	o.t.Helper()
	for _, s := range o.get().Status.Servers {
		out, err := kubectl("exec", "-n", o.ns, "client", "--", "/smoke", "obsim-knobs", "--server", s.Pod+":2882", patch)
		if err == nil {
			continue
		}
		if _, listed := o.servers()[s.Address]; !listed {
			o.t.Logf("knobs %s: OceanBase no longer lists %s (%s)", patch, s.Address, s.Pod)
			continue
		}
		fatalf(o.t, "knobs %s of %s: %v: %s", patch, s.Pod, err, out)
	}
}

// dumpState adds the tenant to the scenario's dump.
func (o *obScenario) dumpState() {
	o.scenario.dumpState()
	out, _ := kubectl("get", "obtenant", "-n", o.ns, "-o", "yaml")
	o.t.Logf("kubectl get obtenant -o yaml:\n%s", out)
}

func parseFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
