package oceanbase_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
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
type player struct {
	t     *testing.T
	c     client.Client
	ns    string
	net   int // the third byte of the nodes' loopback addresses
	mu    sync.Mutex
	hosts map[string]string      // Service IP → loopback address
	nodes map[string]*obsim.Node // pod name → node
	dirs  map[string]string      // pod name → the node's data directory, its volume
	next  int
}

func (p *player) resolve(ip string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
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

// stopDeleted stops the nodes whose pods are gone, as the kubelet would.
func (p *player) stopDeleted(ctx context.Context) {
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, client.InNamespace(p.ns)); err != nil {
		return
	}
	have := map[string]bool{}
	for _, pod := range pods.Items {
		have[pod.Name] = true
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
		if !p.start(name, svc.Spec.ClusterIP, sts) {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name, Labels: sts.Spec.Template.Labels},
			Spec: *sts.Spec.Template.Spec.DeepCopy()}
		for _, claim := range sts.Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
		if err := p.c.Create(ctx, pod); err != nil {
			p.t.Logf("create pod %s: %v", name, err)
			continue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_ = p.c.Status().Update(ctx, pod)
	}
}

// start runs an observer for pod, with the arguments of its template.
// playerKnobs are the observers' knobs: OceanBase's delays shortened.
func playerKnobs() obsim.Knobs {
	d := func(v time.Duration) obsim.Duration { return obsim.Duration{Duration: v} }
	return obsim.Knobs{BootstrapDelay: d(200 * time.Millisecond), StartServiceDelay: d(200 * time.Millisecond),
		Lease: d(2 * time.Second), Heartbeat: d(100 * time.Millisecond), MigrateDelay: d(200 * time.Millisecond),
		TenantDelay: d(300 * time.Millisecond)}
}

// setFaults sets faults on every running observer (replacing earlier ones).
func (p *player) setFaults(faults ...obsim.Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := playerKnobs()
	k.Faults = faults
	for pod, n := range p.nodes {
		if err := n.SetKnobs(k); err != nil {
			p.t.Errorf("observer %s: %v", pod, err)
		}
	}
}

func (p *player) start(pod, ip string, sts *appsv1.StatefulSet) bool {
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
	}
	if p.dirs[pod] == "" {
		p.dirs[pod] = p.t.TempDir()
	}
	n, err := obsim.New(obsim.Config{
		Addr: net.JoinHostPort(ip, "2882"), SQLListen: host + ":2881", RPCListen: host + ":2882",
		ClusterName: arg("--appname"), ClusterID: id, Zone: arg("--zone"), DataDir: p.dirs[pod],
		Knobs: playerKnobs(),
		Resolve: func(addr string) string {
			h, port, _ := net.SplitHostPort(addr)
			return net.JoinHostPort(p.resolve(h), port)
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
	p := &player{t: t, c: c, ns: ns, net: loopbackNet, hosts: map[string]string{}, nodes: map[string]*obsim.Node{},
		dirs: map[string]string{}}
	mgr := testenv.NamespacedManager(t, cfg, newScheme(), ns, 0)
	if err := oceanbase.Setup(mgr, oceanbase.Options{Resync: time.Second, Resolve: p.resolve}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; p.stopAll() })
	return c, ns, p
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
// controller bootstraps and reports serving; sets a parameter; scales a
// zone out (the server is added) and in (the server is deleted from
// OceanBase before its pod goes, and its claim after).
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

	ob.Spec.Zones[0].Replicas = 2
	if err := c.Update(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the added server serves", readyWith(c, ns, "ob", 4))

	ob = get(t, c, ns, "ob")
	ob.Spec.Zones[0].Replicas = 1
	if err := c.Update(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the scale-in ends", readyWith(c, ns, "ob", 3))
	ob = get(t, c, ns, "ob")
	if op := ob.Status.Operation; op == nil || op.Name != "scale-in" || op.Phase != "Succeeded" {
		t.Fatalf("the scale-in flow: %+v", op)
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
	podUIDs := func() map[string]types.UID {
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
	before := podUIDs()

	ob.Spec.Image = "localhost/obsim:1.1"
	if err := c.Update(t.Context(), ob); err != nil {
		t.Fatal(err)
	}
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
	testenv.Eventually(t, "the upgrade ends", func() (bool, string) {
		if ok, why := readyWith(c, ns, "ob", 6)(); !ok {
			return false, why
		}
		o := get(t, c, ns, "ob")
		if op := o.Status.Operation; op == nil || op.Name != "upgrade" || op.Phase != "Succeeded" {
			return false, fmt.Sprintf("operation %+v", op)
		}
		return o.Status.Image == "localhost/obsim:1.1", "image " + o.Status.Image
	})
	cancel()
	if most := <-maxDown; most != 1 {
		t.Errorf("at most %d zones were stopped at once during the upgrade; want 1", most)
	}
	after := podUIDs()
	for pod, uid := range before {
		if after[pod] == uid || after[pod] == "" {
			t.Errorf("pod %s was not re-created (%s before, %q after)", pod, uid, after[pod])
		}
	}
}
