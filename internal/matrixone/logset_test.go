package matrixone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// These tests run the LogSet controller in a manager against a real
// kube-apiserver (envtest), with no kubelet, no StatefulSet controller and
// no MatrixOne: the tests play the first two, and answer for the log pods'
// probes with the views they set (the probe and the reader of its answers
// are tested on real MatrixOne's views in package hakeeper and in the e2e).

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(mov1.AddToScheme(s))
	return s
}

// fakeProbe answers GET /v1/cluster for every log pod with the view the
// test set, or 503 while it has none; and the CNs' lock service restart
// handshake: a CN may stop once its restart was announced, unless the
// test holds its locks; and records the CN labels it is given.
type fakeProbe struct {
	srv  *httptest.Server
	mu   sync.Mutex
	view *hakeeper.View
	// announced and heldLocks are by CN UUID.
	announced, heldLocks map[string]bool
	// labels are the labels last set on each CN, by UUID.
	labels map[string]map[string][]string
	// delay is how long the probe takes to answer the view, as a busy
	// machine's took 1.8 to 4.2 s.
	delay time.Duration
}

func newFakeProbe(t *testing.T) *fakeProbe {
	p := &fakeProbe{announced: map[string]bool{}, heldLocks: map[string]bool{}, labels: map[string]map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc(wire.CNLabelsPath, func(w http.ResponseWriter, r *http.Request) {
		var labels map[string][]string
		if r.Method != http.MethodPut || json.NewDecoder(r.Body).Decode(&labels) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.labels[r.PathValue("uuid")] = labels
		_ = json.NewEncoder(w).Encode(map[string]bool{"ok": true})
	})
	mux.HandleFunc(hakeeper.Path, func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		delay := p.delay
		p.mu.Unlock()
		time.Sleep(delay)
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.view == nil {
			http.Error(w, "no HAKeeper", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(p.view)
	})
	mux.HandleFunc(wire.LockRestartPath, func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		uuid := r.PathValue("uuid")
		if r.Method == http.MethodPost {
			p.announced[uuid] = true
			_ = json.NewEncoder(w).Encode(map[string]bool{"ok": true})
			return
		}
		_ = json.NewEncoder(w).Encode(wire.LockRestart{CanRestart: p.announced[uuid] && !p.heldLocks[uuid]})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// holdLocks has the CN of pod keep its lock tables (held) or let them move.
func (p *fakeProbe) holdLocks(ns, pod string, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heldLocks[wire.StoreID(ns, pod)] = held
}

// labelsOf returns the labels last set on pod's CN, as JSON ("null" for
// none).
func (p *fakeProbe) labelsOf(ns, pod string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	data, _ := json.Marshal(p.labels[wire.StoreID(ns, pod)])
	return string(data)
}

// wasAnnounced reports whether the restart of pod's CN was announced.
func (p *fakeProbe) wasAnnounced(ns, pod string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.announced[wire.StoreID(ns, pod)]
}

// hakeeperView is a view a test changes and publishes through its probe.
type hakeeperView struct {
	hakeeper.View
	probe *fakeProbe
}

// publish has the probe answer a copy of the view.
func (v *hakeeperView) publish() {
	data, err := json.Marshal(v.View)
	if err != nil {
		panic(err)
	}
	var copied hakeeper.View
	if err := json.Unmarshal(data, &copied); err != nil {
		panic(err)
	}
	v.probe.set(&copied)
}

// get2 gets the object name into obj, failing the test when it is gone.
func get2[T client.Object](t *testing.T, c client.Client, ns, name string, obj T) T {
	t.Helper()
	if !get(t, c, ns, name, obj) {
		t.Fatalf("%s is gone", name)
	}
	return obj
}

var eventually = testenv.Eventually

// slow has the probe take d to answer the view.
func (p *fakeProbe) slow(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

func (p *fakeProbe) set(v *hakeeper.View) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.view = v
}

// healthyView is HAKeeper running over the stores of pods, with shards
// 0 and 1 replicated on every store, led by the first.
func healthyView(ns string, pods ...string) *hakeeper.View {
	v := &hakeeper.View{State: wire.StateRunning, Tick: 100}
	for shard := range uint64(2) {
		s := wire.LogShard{ShardID: shard, Replicas: map[uint64]string{}, NumberOfReplicas: uint64(len(pods)), LeaderID: 1}
		for i, pod := range pods {
			s.Replicas[uint64(i+1)] = wire.StoreID(ns, pod)
		}
		v.LogShards = append(v.LogShards, s)
	}
	for _, pod := range pods {
		v.LogStores = append(v.LogStores, wire.LogStore{UUID: wire.StoreID(ns, pod), State: wire.StoreUp,
			Replicas: []wire.Replica{{ShardID: 0}, {ShardID: 1}}})
	}
	return v
}

// setup gives a test a client, a namespace with the shared claim and the
// controller running, its probes answered by the returned fake.
func setup(t *testing.T) (client.Client, string, *fakeProbe) {
	t.Helper()
	return setupWith(t, func(*matrixone.Options) {})
}

// setupWith is setup with options changed by opts.
func setupWith(t *testing.T, opts func(*matrixone.Options)) (client.Client, string, *fakeProbe) {
	t.Helper()
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "mo-test-")
	probe := newFakeProbe(t)
	addr := strings.TrimPrefix(probe.srv.URL, "http://")
	o := matrixone.Options{Resync: time.Second, ResyncNotReady: 200 * time.Millisecond,
		ProbeInterval: 200 * time.Millisecond, ProbeAddress: func(_, _, _ string) string { return addr }}
	opts(&o)
	start := func() (stop func()) {
		mgr := testenv.NamespacedManager(t, cfg, newScheme(), ns, 0)
		if err := matrixone.Setup(mgr, o); err != nil {
			t.Fatal(err)
		}
		return testenv.StartManager(t, mgr)
	}
	stop := start()
	operators.Store(ns, func(meanwhile func()) {
		stop()
		meanwhile()
		stop = start()
	})
	return c, ns, probe
}

// operators holds, by namespace, a function that restarts the namespace's
// operator: it stops its manager, calls meanwhile, and starts a new one,
// with an empty cache and no memory of the old one, as a new leader would.
var operators sync.Map

// restartOperator restarts the operator of ns (operators).
func restartOperator(t *testing.T, ns string, meanwhile func()) {
	t.Helper()
	restart, ok := operators.Load(ns)
	if !ok {
		t.Fatalf("no operator runs in %s", ns)
	}
	restart.(func(func()))(meanwhile)
}

func sharedClaim(t *testing.T, c client.Client, ns string) {
	t.Helper()
	createClaim(t, c, ns, "shared", corev1.ReadWriteMany)
}

// createClaim creates a 1Gi volume claim.
func createClaim(t *testing.T, c client.Client, ns, name string, mode corev1.PersistentVolumeAccessMode) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := c.Create(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
}

// s3 puts the log set on S3, bucket "data" of a MinIO, then modifies it.
func s3(modify func(s *mov1.S3Storage)) func(l *mov1.LogSet) {
	return func(l *mov1.LogSet) {
		l.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{
			Endpoint: "http://minio.storage:9000", Bucket: "data", Region: "us-east-1", CredentialsSecret: "s3-keys"}}
		if modify != nil {
			modify(l.Spec.SharedStorage.S3)
		}
	}
}

func newLogSet(ns string) *mov1.LogSet {
	return &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "log"},
		Spec: mov1.LogSetSpec{Replicas: 3, SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: "shared"}}}}
}

func get(t *testing.T, c client.Client, ns, name string, obj client.Object) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

func logSet(t *testing.T, c client.Client, ns string) *mov1.LogSet {
	t.Helper()
	l := &mov1.LogSet{}
	if !get(t, c, ns, "log", l) {
		t.Fatal("the LogSet is gone")
	}
	return l
}

func condition(obj framework.Object, typ string) string {
	cond := meta.FindStatusCondition(obj.StatusCore().Conditions, typ)
	if cond == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// runPods plays the StatefulSet controller and the kubelet: the
// StatefulSet's status names revision as its latest, and its pods exist,
// ready for a minute, labeled with revision, each with an address.
func runPods(t *testing.T, c client.Client, sts *appsv1.StatefulSet, revision string) {
	t.Helper()
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: *sts.Spec.Replicas,
		ReadyReplicas: *sts.Spec.Replicas, UpdateRevision: revision, CurrentRevision: revision}
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	for i := range int(*sts.Spec.Replicas) {
		runPod(t, c, sts, i, revision)
	}
}

func runPod(t *testing.T, c client.Client, sts *appsv1.StatefulSet, ordinal int, revision string) {
	t.Helper()
	labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
	for k, v := range sts.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: fmt.Sprintf("%s-%d", sts.Name, ordinal),
		Labels: labels}, Spec: *sts.Spec.Template.Spec.DeepCopy()}
	if len(sts.Spec.VolumeClaimTemplates) > 0 {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: build.DataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: build.DataVolume + "-" + pod.Name}}})
	}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", ordinal+1)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// pods are the log pods of newLogSet.
var pods = []string{"log-0", "log-1", "log-2"}

func TestLogSetWaitsForTheSharedClaim(t *testing.T) {
	c, ns, _ := setup(t)
	if err := c.Create(t.Context(), newLogSet(ns)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "Ready=False naming the claim", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "False "+mov1.ReasonWaitingForSharedStorage) && strings.Contains(got, "PersistentVolumeClaim shared"), got
	})
	if get(t, c, ns, "log", &appsv1.StatefulSet{}) {
		t.Fatal("the StatefulSet exists before the shared claim")
	}
	sharedClaim(t, c, ns)
	testenv.Eventually(t, "the StatefulSet", func() (bool, string) {
		return get(t, c, ns, "log", &appsv1.StatefulSet{}), "not yet"
	})
}

func TestLogSetCreatesTheStoresAndIsReadyWhenHAKeeperRuns(t *testing.T) {
	c, ns, probe := setup(t)
	sharedClaim(t, c, ns)
	if err := c.Create(t.Context(), newLogSet(ns)); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "not yet" })
	svc := &corev1.Service{}
	if !get(t, c, ns, "log-headless", svc) || !svc.Spec.PublishNotReadyAddresses {
		t.Fatalf("headless Service %+v", svc.Spec)
	}
	cm := &corev1.ConfigMap{}
	if !get(t, c, ns, sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name, cm) {
		t.Fatal("no configuration ConfigMap")
	}
	// The pass that creates the StatefulSet patches the status after it.
	l := &mov1.LogSet{}
	testenv.Eventually(t, "the bootstrap recorded", func() (bool, string) {
		l = logSet(t, c, ns)
		return l.Status.Bootstrap != nil && len(l.Status.Bootstrap.InitialMembers) == 3, fmt.Sprintf("%+v", l.Status.Bootstrap)
	})
	for _, m := range l.Status.Bootstrap.InitialMembers {
		if !strings.Contains(cm.Data[build.LogTemplateFile], m) {
			t.Errorf("initial member %s is not in the template", m)
		}
	}
	if got := condition(l, framework.ConditionReady); !strings.HasPrefix(got, "False Creating") {
		t.Errorf("Ready before any pod: %s", got)
	}

	runPods(t, c, sts, "r1")
	testenv.Eventually(t, "Ready=False, HAKeeper unreachable", func() (bool, string) {
		got := condition(logSet(t, c, ns), commonv1.ConditionAvailable)
		return strings.HasPrefix(got, "False "+mov1.ReasonHAKeeperUnreachable) && strings.Contains(got, "503"), got
	})
	probe.set(healthyView(ns, pods...))
	testenv.Eventually(t, "Ready", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	l = logSet(t, c, ns)
	if l.Status.HAKeeper != wire.StateRunning || l.Status.ReadyReplicas != 3 || len(l.Status.Stores) != 3 || len(l.Status.Shards) != 2 {
		t.Fatalf("status %+v", l.Status)
	}
	for _, s := range l.Status.Stores {
		if s.State != mov1.StoreUp || s.UUID != wire.StoreID(ns, s.Pod) || s.Replicas != 2 {
			t.Errorf("store %+v", s)
		}
	}
	if sh := l.Status.Shards[1]; sh.Leader != "log-0" || sh.Replicas != 3 || sh.Of != 3 {
		t.Errorf("shard %+v", sh)
	}

	// A store HAKeeper stops hearing from: not Ready, still Available.
	v := healthyView(ns, pods...)
	v.LogStores[1].State = wire.StoreDown
	probe.set(v)
	down := wire.StoreID(ns, "log-1")
	testenv.Eventually(t, "Ready=False StoresDown", func() (bool, string) {
		l := logSet(t, c, ns)
		got := condition(l, framework.ConditionReady)
		return strings.Contains(got, mov1.ReasonStoresDown) && strings.HasPrefix(condition(l, commonv1.ConditionAvailable), "True"), got
	})
	for _, s := range logSet(t, c, ns).Status.Stores {
		if (s.UUID == down) != (s.State == mov1.StoreDown) {
			t.Errorf("store %+v", s)
		}
	}
}

func TestLogSetRestartsOneStoreAtATimeWhenSafe(t *testing.T) {
	c, ns, probe := setup(t)
	sharedClaim(t, c, ns)
	if err := c.Create(t.Context(), newLogSet(ns)); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "not yet" })
	runPods(t, c, sts, "r1")
	// HAKeeper does not hear from log-2: nothing may restart.
	v := healthyView(ns, pods...)
	v.LogStores[2].State = wire.StoreDown
	probe.set(v)
	testenv.Eventually(t, "log-2's store down (the set was never Ready: reason Creating)", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, "the store of log-2 is Down to HAKeeper"), got
	})

	// A configuration change: a new template, a new revision.
	l := logSet(t, c, ns)
	testenv.Update(t, c, l, func(l *mov1.LogSet) { l.Spec.Config = "[log]\nlevel = \"debug\"\n" })
	testenv.Eventually(t, "the StatefulSet on the new template", func() (bool, string) {
		get(t, c, ns, "log", sts)
		return sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name != l.Status.ConfigRevision, sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name
	})
	sts.Status.ObservedGeneration, sts.Status.UpdateRevision = sts.Generation, "r2"
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if n := countPods(t, c, ns); n != 3 {
		t.Fatalf("%d pods left while a store was down: a restart was not safe", n)
	}

	// Every store up: one restarts, the one leading no shard first
	// (log-0 leads both), and no other while it is away.
	probe.set(healthyView(ns, pods...))
	testenv.Eventually(t, "one pod deleted", func() (bool, string) {
		n := countPods(t, c, ns)
		return n == 2, fmt.Sprint(n, " pods")
	})
	if get(t, c, ns, "log-1", &corev1.Pod{}) == false && get(t, c, ns, "log-2", &corev1.Pod{}) == false {
		t.Fatal("two pods deleted")
	}
	if !get(t, c, ns, "log-0", &corev1.Pod{}) {
		t.Fatal("the leader's store restarted first")
	}
	gone := "log-1"
	if get(t, c, ns, gone, &corev1.Pod{}) {
		gone = "log-2"
	}
	time.Sleep(2 * time.Second)
	if n := countPods(t, c, ns); n != 2 {
		t.Fatalf("%d pods while %s is away", n, gone)
	}
	// It comes back on the new revision; the next one goes.
	ordinal := 1
	if gone == "log-2" {
		ordinal = 2
	}
	runPod(t, c, sts, ordinal, "r2")
	testenv.Eventually(t, "the next pod deleted", func() (bool, string) {
		n := countPods(t, c, ns)
		return n == 2, fmt.Sprint(n, " pods")
	})
	if !get(t, c, ns, gone, &corev1.Pod{}) {
		t.Fatalf("%s restarted twice", gone)
	}
	if op := logSet(t, c, ns).Status.Operation; op == nil || op.Name != "rolling-restart" || op.Trigger != "revision r2" ||
		op.Phase != commonv1.PhaseRunning {
		t.Errorf("the rolling restart: %s", operation(logSet(t, c, ns)))
	}
}

// TestLogSetRollingRestartResumesFromStatus: an operator that starts on a
// LogSet whose status.operation says a rolling restart runs (as a new
// leader finds it) goes on with that operation: it restarts the stale
// stores one at a time and ends it, and starts no other.
func TestLogSetRollingRestartResumesFromStatus(t *testing.T) {
	c, ns, probe := setup(t)
	readyLogSet(t, c, ns, probe)
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	restartOperator(t, ns, func() {
		sts := get2(t, c, ns, "log", &appsv1.StatefulSet{})
		sts.Status.UpdateRevision = "r2"
		if err := c.Status().Update(t.Context(), sts); err != nil {
			t.Fatal(err)
		}
		l := logSet(t, c, ns)
		l.Status.Operation = commonv1.NewOperation("rolling-restart", "revision r2", []string{"restart-stale-stores"}, since)
		if err := c.Status().Update(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	})
	sts := get2(t, c, ns, "log", &appsv1.StatefulSet{})
	for range pods {
		// The pods have no finalizer: a pod deleted is gone at once, and
		// the test re-creates it on the new revision.
		gone := -1
		testenv.Eventually(t, "a store restarted", func() (bool, string) {
			for i, name := range pods {
				if !get(t, c, ns, name, &corev1.Pod{}) {
					gone = i
					return true, ""
				}
			}
			return false, operation(logSet(t, c, ns))
		})
		runPod(t, c, sts, gone, "r2")
	}
	op := succeeded(t, "the rolling restart done", func() framework.Object { return logSet(t, c, ns) }, "rolling-restart")
	if !op.StartedAt.Equal(&since) {
		t.Errorf("another rolling restart ran: started at %s, not %s", op.StartedAt, since)
	}
}

func countPods(t *testing.T, c client.Client, ns string) int {
	t.Helper()
	var list corev1.PodList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n
}

func TestLogSetDeletionAppliesTheReclaimPolicy(t *testing.T) {
	for _, policy := range []commonv1.ReclaimPolicy{commonv1.ReclaimRetain, commonv1.ReclaimDelete} {
		t.Run(string(policy), func(t *testing.T) {
			c, ns, _ := setup(t)
			sharedClaim(t, c, ns)
			l := newLogSet(ns)
			l.Spec.Storage.ReclaimPolicy = policy
			if err := c.Create(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			sts := &appsv1.StatefulSet{}
			testenv.Eventually(t, "the StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "not yet" })
			for i := range 3 {
				pvc := sts.Spec.VolumeClaimTemplates[0].DeepCopy()
				pvc.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("data-log-%d", i), Labels: sts.Spec.Selector.MatchLabels}
				if err := c.Create(t.Context(), pvc); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Delete(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the LogSet gone", func() (bool, string) {
				return !get(t, c, ns, "log", &mov1.LogSet{}), "still there"
			})
			for i := range 3 {
				pvc := &corev1.PersistentVolumeClaim{}
				kept := get(t, c, ns, fmt.Sprintf("data-log-%d", i), pvc) && pvc.DeletionTimestamp.IsZero()
				if kept != (policy == commonv1.ReclaimRetain) {
					t.Errorf("data-log-%d kept=%v under %s", i, kept, policy)
				}
			}
			if !get(t, c, ns, "shared", &corev1.PersistentVolumeClaim{}) {
				t.Error("the user's shared claim was deleted")
			}
		})
	}
}

func TestLogSetValidate(t *testing.T) {
	ctl := matrixone.NewLogSetController(matrixone.Options{})
	for _, tc := range []struct {
		name   string
		mutate func(*mov1.LogSet)
		want   []string
	}{
		{"valid", func(*mov1.LogSet) {}, nil},
		{"an owned key", func(l *mov1.LogSet) { l.Spec.Config = "[logservice]\nuuid = \"x\"\n" },
			[]string{"spec.config", "logservice.uuid is set by the operator", "identity"}},
		{"the bootstrap", func(l *mov1.LogSet) { l.Spec.Config = "[logservice.BootstrapConfig]\nnum-of-log-shards = 3\n" },
			[]string{"spec.config", "logservice.BootstrapConfig", "decided once"}},
		{"not TOML", func(l *mov1.LogSet) { l.Spec.Config = "[log" }, []string{"spec.config", "not valid TOML"}},
		{"more shard replicas than stores", func(l *mov1.LogSet) { l.Spec.ShardReplicas = 5 },
			[]string{"spec.replicas", "must not be below shardReplicas (5)"}},
		{"a request above its limit", func(l *mov1.LogSet) {
			l.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		}, []string{"spec.resources.requests.memory", "must not exceed the limit (1Gi)"}},
		{"a bad image", func(l *mov1.LogSet) { l.Spec.Image = "Not An Image" }, []string{"spec.image"}},
		{"a shared claim to make, sized", func(l *mov1.LogSet) { l.Spec.SharedStorage.FileSystem.Size = ptr.To(resource.MustParse("5Gi")) }, nil},
		{"a shared claim to make of size zero", func(l *mov1.LogSet) { l.Spec.SharedStorage.FileSystem.Size = ptr.To(resource.MustParse("0")) },
			[]string{"spec.sharedStorage.fileSystem.size", "must be positive"}},
		{"a negative storeFailureTimeout", func(l *mov1.LogSet) { l.Spec.StoreFailureTimeout = &metav1.Duration{Duration: -time.Minute} },
			[]string{"spec.storeFailureTimeout", "must not be negative"}},
		{"storeFailureTimeout 0s turns replacement off", func(l *mov1.LogSet) { l.Spec.StoreFailureTimeout = &metav1.Duration{} }, nil},
		{"a root password no Secret can be named", func(l *mov1.LogSet) { l.Spec.RootPassword = "Root_Password" },
			[]string{"spec.rootPassword", "not a valid Secret name"}},
		{"a claim no claim can be named", func(l *mov1.LogSet) { l.Spec.SharedStorage.FileSystem.ClaimName = "Shared Claim" },
			[]string{"spec.sharedStorage.fileSystem.claimName", "not a valid PersistentVolumeClaim name"}},
		{"a claim's class no class can be named", func(l *mov1.LogSet) { l.Spec.SharedStorage.FileSystem.StorageClassName = ptr.To("NFS_Class") },
			[]string{"spec.sharedStorage.fileSystem.storageClassName", "not a valid StorageClass name"}},
		{"S3", s3(nil), nil},
		{"an S3 endpoint without a host", s3(func(s *mov1.S3Storage) { s.Endpoint = "http://:9000" }),
			[]string{"spec.sharedStorage.s3.endpoint", "must name a host"}},
		{"an S3 endpoint that is no URL", s3(func(s *mov1.S3Storage) { s.Endpoint = "minio.storage" }),
			[]string{"spec.sharedStorage.s3.endpoint", "must be a URL of scheme http or https"}},
		{"an S3 endpoint's port out of range", s3(func(s *mov1.S3Storage) { s.Endpoint = "https://minio:70000" }),
			[]string{"spec.sharedStorage.s3.endpoint", "port 70000"}},
		{"an S3 credentials Secret no Secret can be named", s3(func(s *mov1.S3Storage) { s.CredentialsSecret = "S3_Keys" }),
			[]string{"spec.sharedStorage.s3.credentialsSecret"}},
		{"an upper-case bucket", s3(func(s *mov1.S3Storage) { s.Bucket = "MyBucket" }),
			[]string{"spec.sharedStorage.s3.bucket", "only lower-case letters"}},
		{"a bucket with an underscore", s3(func(s *mov1.S3Storage) { s.Bucket = "my_bucket" }), []string{"spec.sharedStorage.s3.bucket"}},
		{"a bucket ending in a hyphen", s3(func(s *mov1.S3Storage) { s.Bucket = "bucket-" }),
			[]string{"spec.sharedStorage.s3.bucket", "begin and end"}},
		{"a bucket with two dots", s3(func(s *mov1.S3Storage) { s.Bucket = "my..bucket" }),
			[]string{"spec.sharedStorage.s3.bucket", "two dots"}},
		{"a bucket that is an IP address", s3(func(s *mov1.S3Storage) { s.Bucket = "192.168.5.4" }),
			[]string{"spec.sharedStorage.s3.bucket", "IP address"}},
		{"a bucket of a reserved prefix", s3(func(s *mov1.S3Storage) { s.Bucket = "xn--bucket" }),
			[]string{"spec.sharedStorage.s3.bucket", "xn--"}},
		{"a bucket of a reserved suffix", s3(func(s *mov1.S3Storage) { s.Bucket = "data-s3alias" }),
			[]string{"spec.sharedStorage.s3.bucket", "-s3alias"}},
		{"a bucket with dots and digits", s3(func(s *mov1.S3Storage) { s.Bucket = "data.2024-x" }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogSet("db")
			tc.mutate(l)
			ctl.Default(l)
			err := ctl.Validate(l)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLogSetMakesTheSharedClaimItsSpecSizes: with fileSystem.size the
// LogSet makes the shared claim, unowned; deleting the set keeps it, and
// the stores ConfigMap, under Retain and deletes both under Delete.
func TestLogSetMakesTheSharedClaimItsSpecSizes(t *testing.T) {
	for _, policy := range []commonv1.ReclaimPolicy{commonv1.ReclaimRetain, commonv1.ReclaimDelete} {
		t.Run(string(policy), func(t *testing.T) {
			c, ns, _ := setup(t)
			l := newLogSet(ns)
			l.Spec.SharedStorage.FileSystem = &mov1.FileSystemStorage{ClaimName: "made", Size: ptr.To(resource.MustParse("2Gi")),
				StorageClassName: ptr.To("shared-class")}
			l.Spec.Storage.ReclaimPolicy = policy
			if err := c.Create(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the StatefulSet", func() (bool, string) { return get(t, c, ns, "log", &appsv1.StatefulSet{}), "not yet" })
			claim := &corev1.PersistentVolumeClaim{}
			if !get(t, c, ns, "made", claim) {
				t.Fatal("no shared claim")
			}
			if claim.Spec.AccessModes[0] != corev1.ReadWriteMany || claim.Spec.Resources.Requests.Storage().String() != "2Gi" ||
				*claim.Spec.StorageClassName != "shared-class" || len(claim.OwnerReferences) != 0 {
				t.Errorf("claim %+v %+v", claim.ObjectMeta, claim.Spec)
			}
			if err := c.Delete(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the LogSet gone", func() (bool, string) {
				return !get(t, c, ns, "log", &mov1.LogSet{}), "still there"
			})
			claim = &corev1.PersistentVolumeClaim{}
			kept := get(t, c, ns, "made", claim) && claim.DeletionTimestamp.IsZero()
			stores := get(t, c, ns, "log-stores", &corev1.ConfigMap{})
			if kept != (policy == commonv1.ReclaimRetain) || stores != kept {
				t.Errorf("under %s: shared claim kept %v, stores ConfigMap kept %v", policy, kept, stores)
			}
		})
	}
}
