package oceanbase_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsim"
	"github.com/stewardhq/steward/internal/testenv"
)

// These tests run the OBCluster controller against a real kube-apiserver
// (envtest) with no kubelet: a player creates the observers' pods as the
// StatefulSet controller would and runs an obsim node for each, listening
// on a loopback address and known to the cluster by its Service's IP, as
// an observer in service mode is.

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(obv1.AddToScheme(s))
	return s
}

// player plays the StatefulSet controller, the kubelet and the observers.
// An observer's data directory belongs to its pod's volume claim: a pod
// re-created on its claim restarts on its data, one on a new claim (the
// old one deleted) starts empty, as on a lost volume.
type player struct {
	t     *testing.T
	c     client.Client
	ns    string
	net   int // the third byte of the nodes' loopback addresses
	mu    sync.Mutex
	hosts map[string]string      // Service IP → loopback address
	nodes map[string]*obsim.Node // pod name → node
	// builds are the nodes' build versions, from their pods' images.
	builds map[string]string
	dirs   map[types.UID]string // volume claim → the node's data directory
	next   int

	// base holds the observers' data directories and the tests' backup
	// destinations (tempDir), removed once the observers stopped.
	base string

	// cfg and stopManager let a test stop the manager and start another.
	cfg         *rest.Config
	stopManager func()

	stmtMu sync.Mutex
	stmts  []string // every statement the observers received

	// routeDelay is how long a new observer's Service takes to route to
	// it once its pod runs (kube-proxy's lag): until then its address
	// leads nowhere, for the controller and the other observers alike.
	routeDelay time.Duration
	routedAt   map[string]time.Time // Service IP → when it routes
}

func (p *player) resolve(ip string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.routedAt[ip]; ok && time.Now().Before(at) {
		return fmt.Sprintf("127.0.%d.254", p.net) // nothing listens there
	}
	if h, ok := p.hosts[ip]; ok {
		return h
	}
	return ip
}

func (p *player) run(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		var sets appsv1.StatefulSetList
		if err := p.c.List(ctx, &sets, client.InNamespace(p.ns)); err != nil {
			continue
		}
		for _, sts := range sets.Items {
			p.sync(ctx, &sts)
		}
		p.stopDeleted(ctx)
	}
}

// stopDeleted stops the nodes whose pods are gone or terminating, and
// removes the terminating pods, as the kubelet would. A pod stays
// terminating after a graceful delete (of a bound pod), and after a DELETE
// canceled between the API server's two writes, the one that marks the
// pod deleted and the one that removes it (a manager stopped mid-request:
// TestRecoverManagerRestarted then hung now and then). In a real cluster
// the kubelet, or the pod garbage collector for an unbound pod, ends it.
func (p *player) stopDeleted(ctx context.Context) {
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, client.InNamespace(p.ns)); err != nil {
		return
	}
	have := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp == nil {
			have[pod.Name] = true
			continue
		}
		p.stop(pod.Name)
		_ = p.c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	}
	p.mu.Lock()
	var gone []string
	for name := range p.nodes {
		if !have[name] {
			gone = append(gone, name)
		}
	}
	p.mu.Unlock()
	for _, name := range gone {
		p.stop(name)
	}
}

func (p *player) sync(ctx context.Context, sts *appsv1.StatefulSet) {
	replicas := int(ptr.Deref(sts.Spec.Replicas, 0))
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, client.InNamespace(p.ns), client.MatchingLabels(sts.Spec.Selector.MatchLabels)); err != nil {
		return
	}
	have := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		have[pod.Name] = true
		ordinal, err := strconv.Atoi(strings.TrimPrefix(pod.Name, sts.Name+"-"))
		if err == nil && ordinal >= replicas {
			p.stop(pod.Name)
			_ = p.c.Delete(ctx, pod)
		}
	}
	for i := range replicas {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		if have[name] {
			continue
		}
		svc := &corev1.Service{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, svc); err != nil || svc.Spec.ClusterIP == "" {
			continue
		}
		p.stop(name) // a deleted pod's observer is gone with it
		claim := p.claim(ctx, sts, name)
		if claim == nil || !p.start(name, svc.Spec.ClusterIP, sts, claim.UID) {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name, Labels: sts.Spec.Template.Labels,
			Annotations: sts.Spec.Template.Annotations},
			Spec: *sts.Spec.Template.Spec.DeepCopy()}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: build.DataVolume,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}})
		if err := p.c.Create(ctx, pod); err != nil {
			p.t.Logf("create pod %s: %v", name, err)
			continue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_ = p.c.Status().Update(ctx, pod)
	}
}

// playerKnobs are the observers' knobs: OceanBase's delays shortened.
func playerKnobs() obsim.Knobs {
	d := func(v time.Duration) obsim.Duration { return obsim.Duration{Duration: v} }
	return obsim.Knobs{BootstrapDelay: d(200 * time.Millisecond), StartServiceDelay: d(200 * time.Millisecond),
		Lease: d(2 * time.Second), Heartbeat: d(100 * time.Millisecond), MigrateDelay: d(200 * time.Millisecond),
		TenantDelay: d(300 * time.Millisecond)}
}

// playerBuilds are the build versions of the obsim images the tests use,
// as images/oceanbase-obsim/build.sh sets them: obsim:1.1 is 4.3.5.2,
// any other tag 4.3.5.1.
func playerBuild(image string) string {
	if strings.HasSuffix(image, ":1.1") {
		return "4.3.5.2_101000012025012817-obsim(Jan 28 2025 17:00:00)"
	}
	return obsim.DefaultBuildVersion
}

// setFaults sets faults on every running observer (replacing earlier ones).
func (p *player) setFaults(faults ...obsim.Fault) {
	p.setKnobs(func(k *obsim.Knobs) { k.Faults = faults })
}

// setKnobs sets the player's knobs, changed by change, on every running
// observer (replacing earlier changes).
func (p *player) setKnobs(change func(*obsim.Knobs)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pod, n := range p.nodes {
		k := playerKnobs()
		change(&k)
		k.BuildVersion = p.builds[pod]
		if err := n.SetKnobs(k); err != nil {
			p.t.Errorf("observer %s: %v", pod, err)
		}
	}
}

// claim returns pod's volume claim, created from the StatefulSet's
// template if missing, as the StatefulSet controller does; nil while a
// deleted one goes (the player releases it, as the claim protection
// controller does once no pod uses it).
func (p *player) claim(ctx context.Context, sts *appsv1.StatefulSet, pod string) *corev1.PersistentVolumeClaim {
	tmpl := sts.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: tmpl.Name + "-" + pod}, pvc)
	switch {
	case apierrors.IsNotFound(err):
		pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: tmpl.Name + "-" + pod,
			Labels: tmpl.Labels}, Spec: *tmpl.Spec.DeepCopy()}
		if err := p.c.Create(ctx, pvc); err != nil {
			return nil
		}
		return pvc
	case err != nil:
		return nil
	case pvc.DeletionTimestamp != nil:
		if len(pvc.Finalizers) > 0 {
			pvc.Finalizers = nil
			_ = p.c.Update(ctx, pvc)
		}
		return nil
	}
	return pvc
}

// start runs an observer for pod, with the arguments of its template, on
// the data directory of its claim: a new claim is an empty store.
func (p *player) start(pod, ip string, sts *appsv1.StatefulSet, claim types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[pod] != nil {
		return true
	}
	args := sts.Spec.Template.Spec.Containers[0].Args
	arg := func(flag string) string {
		for i, a := range args {
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	id, err := strconv.ParseInt(arg("--cluster_id"), 10, 64)
	if err != nil {
		p.t.Errorf("pod %s: --cluster_id: %v", pod, err)
		return false
	}
	host, ok := p.hosts[ip]
	if !ok {
		p.next++
		host = fmt.Sprintf("127.0.%d.%d", p.net, p.next)
		p.hosts[ip] = host
		if p.routeDelay > 0 {
			if p.routedAt == nil {
				p.routedAt = map[string]time.Time{}
			}
			p.routedAt[ip] = time.Now().Add(p.routeDelay)
		}
	}
	if p.dirs[claim] == "" {
		p.dirs[claim] = p.tempDir()
	}
	knobs := playerKnobs()
	knobs.BuildVersion = playerBuild(sts.Spec.Template.Spec.Containers[0].Image)
	p.builds[pod] = knobs.BuildVersion
	n, err := obsim.New(obsim.Config{
		Addr: net.JoinHostPort(ip, "2882"), SQLListen: host + ":2881", RPCListen: host + ":2882",
		ClusterName: arg("--appname"), ClusterID: id, Zone: arg("--zone"), DataDir: p.dirs[claim],
		Knobs: knobs,
		Resolve: func(addr string) string {
			h, port, _ := net.SplitHostPort(addr)
			return net.JoinHostPort(p.resolve(h), port)
		},
		Trace: func(q string) {
			p.stmtMu.Lock()
			defer p.stmtMu.Unlock()
			p.stmts = append(p.stmts, q)
		},
	})
	if err == nil {
		err = n.Start()
	}
	if err != nil {
		p.t.Errorf("start an observer for %s: %v", pod, err)
		return false
	}
	p.nodes[pod] = n
	return true
}

func (p *player) stop(pod string) {
	p.mu.Lock()
	n := p.nodes[pod]
	delete(p.nodes, pod)
	p.mu.Unlock()
	if n != nil {
		n.Stop()
	}
}

func (p *player) stopAll() {
	p.mu.Lock()
	pods := make([]string, 0, len(p.nodes))
	for pod := range p.nodes {
		pods = append(pods, pod)
	}
	p.mu.Unlock()
	for _, pod := range pods {
		p.stop(pod)
	}
}

// tempDir returns a new directory under the player's base: removed after
// the observers stop, unlike one of t.TempDir made after setup.
func (p *player) tempDir() string {
	dir, err := os.MkdirTemp(p.base, "d")
	if err != nil {
		p.t.Fatal(err)
	}
	return dir
}

// setup gives a test a namespace with the controller and a player.
func setup(t *testing.T, loopbackNet int) (client.Client, string, *player) {
	t.Helper()
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.%d.1:0", loopbackNet)); err != nil {
		t.Skipf("cannot listen on 127.0.%d.1: %v", loopbackNet, err)
	} else {
		l.Close()
	}
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "ob-test-")
	// Created before the cleanup that stops the observers is registered,
	// so removed after it: an observer still writing its store or a
	// backup destination would make its removal fail.
	base := t.TempDir()
	p := &player{t: t, c: c, ns: ns, net: loopbackNet, hosts: map[string]string{}, nodes: map[string]*obsim.Node{}, builds: map[string]string{},
		dirs: map[types.UID]string{}, cfg: cfg, base: base}
	p.startManager()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; p.stopAll() })
	return c, ns, p
}

// startManager starts a manager running the controller.
func (p *player) startManager() {
	mgr := testenv.NamespacedManager(p.t, p.cfg, newScheme(), p.ns, 0)
	if err := oceanbase.Setup(mgr, oceanbase.Options{Resync: time.Second, Resolve: p.resolve}); err != nil {
		p.t.Fatal(err)
	}
	p.stopManager = testenv.StartManager(p.t, mgr)
}

func get(t *testing.T, c client.Client, ns, name string) *obv1.OBCluster {
	t.Helper()
	ob := &obv1.OBCluster{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, ob); err != nil {
		t.Fatal(err)
	}
	return ob
}

func readyWith(c client.Client, ns, name string, active int32) func() (bool, string) {
	return func() (bool, string) {
		ob := &obv1.OBCluster{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ob); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(ob.Status.Conditions, framework.ConditionReady)
		running := ob.Status.Operation != nil && ob.Status.Operation.Phase.Active()
		if r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != ob.Generation ||
			ob.Status.ActiveServers != active || running {
			return false, fmt.Sprintf("ready %v, %d active, operation %v", r, ob.Status.ActiveServers, ob.Status.Operation)
		}
		return true, ""
	}
}

// TestBootstrapScaleOutAndIn creates a three-zone cluster, which the
// controller bootstraps and reports serving; sets a parameter; scales two
// zones out (the servers are added, each with its own ServerAdded Event)
// and in (the servers are deleted from OceanBase before their pods go, and
// their claims after).
func TestBootstrapScaleOutAndIn(t *testing.T) {
	c, ns, _ := setup(t, 71)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image:      "localhost/obsim:1.0",
		Zones:      []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
		Parameters: []obv1.Parameter{{Name: "syslog_level", Value: "INFO"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cluster is bootstrapped and serves", readyWith(c, ns, "ob", 3))
	ob = get(t, c, ns, "ob")
	if ob.Status.BootstrappedAt == nil || ob.Status.RootService == "" || len(ob.Status.ParameterDrift) != 0 {
		t.Fatalf("status after the bootstrap: %+v", ob.Status)
	}
	if op := ob.Status.Operation; op == nil || op.Name != "bootstrap" || op.Phase != "Succeeded" {
		t.Fatalf("the bootstrap flow: %+v", op)
	}
	for _, s := range []string{"ob-root", "ob-operator"} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: s}, &corev1.Secret{}); err != nil {
			t.Fatalf("generated Secret %s: %v", s, err)
		}
	}

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones[0].Replicas, ob.Spec.Zones[1].Replicas = 2, 2 })
	testenv.Eventually(t, "the added servers serve", readyWith(c, ns, "ob", 5))
	// Each added server has its own Event, about its pod, even when both
	// were added in one pass.
	testenv.Eventually(t, "a ServerAdded Event for each added server", func() (bool, string) {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var about []string
		for _, e := range list.Items {
			if e.Reason == obv1.EventServerAdded && e.Related != nil && strings.Contains(e.Note, "("+e.Related.Name+")") {
				about = append(about, e.Related.Name)
			}
		}
		return slices.Contains(about, "ob-z1-1") && slices.Contains(about, "ob-z2-1"), fmt.Sprintf("ServerAdded about %v", about)
	})

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones[0].Replicas, ob.Spec.Zones[1].Replicas = 1, 1 })
	testenv.Eventually(t, "the scale-in ends", readyWith(c, ns, "ob", 3))
	ob = get(t, c, ns, "ob")
	if op := ob.Status.Operation; op == nil || op.Name != "scale-in" || op.Phase != "Succeeded" {
		t.Fatalf("the scale-in flow: %+v", op)
	}
	// Its last step released the departing observers by holding their
	// zones' StatefulSets at the spec's size, as status still says (a
	// finished flow holds nothing any more).
	op := ob.Status.Operation
	held := slices.SortedFunc(slices.Values(op.Held), func(a, b commonv1.HeldReplicas) int { return strings.Compare(a.Workload, b.Workload) })
	wantHeld := []commonv1.HeldReplicas{{Workload: "ob-z1", Replicas: 1}, {Workload: "ob-z2", Replicas: 1}}
	if !slices.Equal(op.Steps, []string{"delete-servers", "wait-servers-deleted", "remove-observers"}) ||
		!slices.Equal(held, wantHeld) {
		t.Errorf("the scale-in: steps %v, held %v; want its three steps, holding %v", op.Steps, op.Held, wantHeld)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: build.PodName(ob, "z1", 1)}, &corev1.Pod{}); err == nil {
		t.Fatal("the departed observer's pod is still there")
	}
}

// TestRollingUpgrade changes the image of a 2-2-2 cluster: every zone is
// upgraded (ob-operator #540), one zone at a time, each stopped in
// OceanBase while its observers are re-created and started again once they
// serve.
func TestRollingUpgrade(t *testing.T) {
	c, ns, _ := setup(t, 73)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2", Replicas: 2}, {Name: "z3", Replicas: 2}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cluster serves", readyWith(c, ns, "ob", 6))
	ob = get(t, c, ns, "ob")
	before := podUIDs(t, c, ns)

	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Image = "localhost/obsim:1.1" })
	// Watch the zones as the controller reports them: never two down.
	ctx, cancel := context.WithCancel(t.Context())
	maxDown := make(chan int)
	go func() {
		most := 0
		for ctx.Err() == nil {
			o := &obv1.OBCluster{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(ob), o); err == nil {
				down := 0
				for _, z := range o.Status.Zones {
					if z.Status == "INACTIVE" {
						down++
					}
				}
				most = max(most, down)
			}
			time.Sleep(20 * time.Millisecond)
		}
		maxDown <- most
	}()
	testenv.Eventually(t, "the upgrade ends", upgradedTo(t, c, ns, "localhost/obsim:1.1", 6))
	cancel()
	if most := <-maxDown; most != 1 {
		t.Errorf("at most %d zones were stopped at once during the upgrade; want 1", most)
	}
	after := podUIDs(t, c, ns)
	for pod, uid := range before {
		if after[pod] == uid || after[pod] == "" {
			t.Errorf("pod %s was not re-created (%s before, %q after)", pod, uid, after[pod])
		}
	}
}

// eventually is testenv.Eventually with a longer bound, for flows of
// several polled steps.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// TestUpgradeTwoZones changes the image of a cluster of two zones, which
// cannot stop a zone (OceanBase refuses: the sys tenant would lose its
// majority): its observers are re-created one at a time, never two out of
// service at once, and every one runs the new image at the end.
func TestUpgradeTwoZones(t *testing.T) {
	c, ns, _ := setup(t, 77)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 2}, {Name: "z2"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Image = "localhost/obsim:1.1" })

	ctx, cancel := context.WithCancel(t.Context())
	maxOut := make(chan int)
	go func() { // the observers out of service at once: pods missing, going or not ready
		most := 0
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
				in := 0
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil && workload.IsReady(&p) {
						in++
					}
				}
				most = max(most, 3-in)
			}
			time.Sleep(20 * time.Millisecond)
		}
		maxOut <- most
	}()
	eventually(t, "the upgrade ends", upgradedTo(t, c, ns, "localhost/obsim:1.1", 3))
	cancel()
	if most := <-maxOut; most != 1 {
		t.Errorf("at most %d observers were out of service at once; want 1", most)
	}

	// A change of resources (the observer's memory_limit) rolls the
	// observers as an image change does: the StatefulSets are OnDelete.
	before := podUIDs(t, c, ns)
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) {
		ob.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	})
	eventually(t, "the observers run the new resources", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 3)(); !ok {
			return false, why
		}
		after := podUIDs(t, c, ns)
		for pod, uid := range before {
			if after[pod] == uid || after[pod] == "" {
				return false, fmt.Sprintf("pod %s not re-created yet", pod)
			}
		}
		return true, ""
	})
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if args := strings.Join(p.Spec.Containers[0].Args, " "); !strings.Contains(args, "memory_limit=2048M") {
			t.Errorf("pod %s runs %s", p.Name, args)
		}
	}
}

// upgradedTo holds once the upgrade flow succeeded, every observer runs
// image and active servers serve.
func upgradedTo(t *testing.T, c client.Client, ns, image string, active int32) func() (bool, string) {
	return func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", active)(); !ok {
			return false, why
		}
		o := get(t, c, ns, "ob")
		if op := o.Status.Operation; op == nil || op.Name != "upgrade" || op.Phase != "Succeeded" {
			return false, fmt.Sprintf("operation %+v", op)
		}
		return o.Status.Image == image, "image " + o.Status.Image
	}
}

// podUIDs are the namespace's pods' UIDs by name.
func podUIDs(t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// TestScaleOutWaitsForService scales a zone out while a new observer's
// Service routes to it only a while after its pod is ready, as kube-proxy
// lags: the server is added once it answers there, without an ADD SERVER
// OceanBase refuses ("server not reachable") and the Warning Event that
// made on every scale-out (issue 27 item 12).
func TestScaleOutWaitsForService(t *testing.T) {
	c, ns, p := setup(t, 81)
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0",
		Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}, {Name: "z3"}},
	}}
	if err := c.Create(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster serves", readyWith(c, ns, "ob", 3))
	p.mu.Lock()
	p.routeDelay = 3 * time.Second
	p.mu.Unlock()
	testenv.Update(t, c, ob, func(ob *obv1.OBCluster) { ob.Spec.Zones[0].Replicas = 2 })
	eventually(t, "the added server serves", readyWith(c, ns, "ob", 4))
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Regarding.Kind, "OB") { // not the API server's own
			t.Errorf("Warning Event %s on %s %s: %s", e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	if n := p.statements("ADD SERVER"); n != 1 {
		t.Errorf("%d ADD SERVER statements; want 1", n)
	}
}
