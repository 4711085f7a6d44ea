package zookeeper_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/internal/zookeeper"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// These tests run the ZookeeperCluster controller in a manager against a
// real kube-apiserver (envtest). Nothing else runs there: the StatefulSet
// makes no pods and no ZooKeeper server answers, so a cluster never gets a
// quorum; what the tests check is what the controller writes to the API
// server on its own: the children, status and conditions, the finalizer
// and the volume claims it deletes.

const (
	// quiet is how long a test watches for something that must not happen.
	quiet = 2 * time.Second
	// testVerbosity is the managers' log verbosity; 1 shows every status
	// write and action.
	testVerbosity = 0
)

// newScheme returns a scheme with client-go's kinds and ZookeeperCluster.
func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(zkv1.AddToScheme(s))
	return s
}

// setup gives a test the shared API server's configuration, a client that
// can watch, and a namespace of its own.
func setup(t *testing.T) (*rest.Config, client.WithWatch, string) {
	t.Helper()
	cfg := server.Config(t)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return cfg, c, testenv.Namespace(t, c, "zk-test-")
}

// startManager runs a manager with the ZooKeeper controller, limited to
// namespace ns, until the test ends.
func startManager(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	startManagerWith(t, cfg, ns, zookeeper.Options{Resync: time.Second})
}

// startManagerWith runs the controller with opts, four workers (as the
// manager runs it), limited to namespace ns.
func startManagerWith(t *testing.T, cfg *rest.Config, ns string, opts zookeeper.Options) {
	t.Helper()
	mgr := testenv.NamespacedManager(t, cfg, newScheme(), ns, testVerbosity)
	if err := zookeeper.Setup(mgr, opts); err != nil {
		t.Fatalf("set up the controller: %v", err)
	}
	testenv.StartManager(t, mgr)
}

// consistently checks cond for quiet, failing the test as soon as it does
// not hold.
func consistently(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		if ok, why := cond(); !ok {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(4 * testenv.Poll)
	}
}

// newCluster returns a ZookeeperCluster with only metadata, spec set by
// mutate.
func newCluster(ns, name string, mutate func(*zkv1.ZookeeperClusterSpec)) *zkv1.ZookeeperCluster {
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if mutate != nil {
		mutate(&zk.Spec)
	}
	return zk
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// get reads the object ns/name into obj and reports whether it exists.
func get(t *testing.T, c client.Client, ns, name string, obj client.Object) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get %T %s/%s: %v", obj, ns, name, err)
	}
	return true
}

// mustGet reads the object ns/name into obj, failing the test when it does
// not exist.
func mustGet(t *testing.T, c client.Client, ns, name string, obj client.Object) {
	t.Helper()
	if !get(t, c, ns, name, obj) {
		t.Fatalf("%T %s/%s does not exist", obj, ns, name)
	}
}

// waitCluster waits until the cluster satisfies cond and returns it.
func waitCluster(t *testing.T, c client.Client, ns, name, what string, cond func(zk *zkv1.ZookeeperCluster) bool) *zkv1.ZookeeperCluster {
	t.Helper()
	var zk *zkv1.ZookeeperCluster
	testenv.Eventually(t, what, func() (bool, string) {
		zk = &zkv1.ZookeeperCluster{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, zk); err != nil {
			return false, err.Error()
		}
		return cond(zk), fmt.Sprintf("generation %d status %s", zk.Generation, describeStatus(zk))
	})
	return zk
}

// describeStatus summarizes a cluster's status for failure messages.
func describeStatus(zk *zkv1.ZookeeperCluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "observedGeneration=%d members=%v configRevision=%q", zk.Status.ObservedGeneration, zk.Status.Members, zk.Status.ConfigRevision)
	for _, c := range zk.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s(%q)", c.Type, c.Status, c.Reason, c.Message)
	}
	if op := zk.Status.Operation; op != nil {
		fmt.Fprintf(&b, " operation=%s/%s/%s held=%v", op.Name, op.Step, op.Phase, op.Held)
	}
	return b.String()
}

// condition returns condition t of zk, or a zero one.
func condition(zk *zkv1.ZookeeperCluster, t string) metav1.Condition {
	if c := meta.FindStatusCondition(zk.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// settled reports whether the controller acted on zk's current generation
// and found nothing to do: the state of a new cluster whose StatefulSet
// never makes pods (Creating, waiting for them).
func settled(zk *zkv1.ZookeeperCluster) bool {
	return zk.Status.ObservedGeneration == zk.Generation &&
		condition(zk, framework.ConditionSynced).Status == metav1.ConditionTrue &&
		zk.Status.ConfigRevision != "" &&
		condition(zk, commonv1.ConditionAvailable).Status != "" &&
		strings.Contains(condition(zk, framework.ConditionReady).Message, "server pods exist")
}

// ownedBy fails the test unless obj's controller is zk.
func ownedBy(t *testing.T, obj client.Object, zk *zkv1.ZookeeperCluster) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != zk.UID || ref.Kind != "ZookeeperCluster" || ref.Name != zk.Name {
		t.Errorf("%T %s: controller %+v, want ZookeeperCluster %s (%s)", obj, obj.GetName(), ref, zk.Name, zk.UID)
	}
}

// membersOf parses the members ConfigMap's zoo.cfg.dynamic and returns its
// server ids.
func membersOf(t *testing.T, cm *corev1.ConfigMap) []int {
	t.Helper()
	cfg, err := zkclient.ParseConfig([]byte(cm.Data[build.DynamicConfigKey]))
	if err != nil {
		t.Fatalf("ConfigMap %s: parse %s: %v", cm.Name, build.DynamicConfigKey, err)
	}
	return cfg.IDs()
}

// projectedConfigMaps returns the ConfigMaps of the pod template's config
// volume.
func projectedConfigMaps(sts *appsv1.StatefulSet) []string {
	var names []string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name != build.ConfigVolume || v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				names = append(names, s.ConfigMap.Name)
			}
		}
	}
	return names
}

// recordMembers records the content of every version of the members
// ConfigMap ns/name the API server reports, from now until the test ends.
type membersRecorder struct {
	mu       sync.Mutex
	versions []string
}

func recordMembers(t *testing.T, c client.WithWatch, ns, name string) *membersRecorder {
	t.Helper()
	r := &membersRecorder{}
	w, err := c.Watch(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watch ConfigMaps: %v", err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Name != name || ev.Type == watch.Deleted {
				continue
			}
			r.mu.Lock()
			r.versions = append(r.versions, cm.Data[build.DynamicConfigKey])
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *membersRecorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.versions)
}

// TestCreate checks what a ZookeeperCluster with nothing but metadata
// makes: the Services, the budget, the credentials Secret, both
// ConfigMaps and the StatefulSet, all owned by the cluster, and the status
// of an ensemble that does not serve yet.
func TestCreate(t *testing.T) {
	cfg, c, ns := setup(t)
	members := recordMembers(t, c, ns, "zk-members")
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", nil))
	zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)

	if !slices.Contains(zk.Finalizers, framework.DefaultFinalizer) {
		t.Errorf("finalizers = %v, want %s", zk.Finalizers, framework.DefaultFinalizer)
	}
	// The API server applied the CRD's defaults.
	if zk.Spec.Replicas != 3 || zk.Spec.Storage.ReclaimPolicy != commonv1.ReclaimRetain || zk.Spec.AdminPort != 8080 {
		t.Fatalf("spec = %+v, want the CRD's defaults", zk.Spec)
	}

	t.Run("services", func(t *testing.T) {
		var headless, clientSvc corev1.Service
		mustGet(t, c, ns, build.HeadlessServiceName(zk), &headless)
		mustGet(t, c, ns, build.ClientServiceName(zk), &clientSvc)
		ownedBy(t, &headless, zk)
		ownedBy(t, &clientSvc, zk)
		if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
			t.Errorf("headless Service: clusterIP %q publishNotReadyAddresses %t, want None and true",
				headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
		}
		if clientSvc.Spec.Type != corev1.ServiceTypeClusterIP || len(clientSvc.Spec.Ports) != 1 || clientSvc.Spec.Ports[0].Port != build.ClientPort {
			t.Errorf("client Service: type %s ports %+v, want ClusterIP on %d", clientSvc.Spec.Type, clientSvc.Spec.Ports, build.ClientPort)
		}
		for _, svc := range []*corev1.Service{&headless, &clientSvc} {
			if !maps.Equal(svc.Spec.Selector, build.Selector(zk, build.ComponentServer)) {
				t.Errorf("Service %s selects %v, want the servers %v", svc.Name, svc.Spec.Selector, build.Selector(zk, build.ComponentServer))
			}
		}
	})

	t.Run("budget", func(t *testing.T) {
		var pdb policyv1.PodDisruptionBudget
		mustGet(t, c, ns, zk.Name, &pdb)
		ownedBy(t, &pdb, zk)
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("PodDisruptionBudget maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
		}
	})

	t.Run("credentials", func(t *testing.T) {
		var secret corev1.Secret
		mustGet(t, c, ns, build.CredentialsSecretName(zk), &secret)
		ownedBy(t, &secret, zk)
		password := string(secret.Data[build.SuperPasswordKey])
		if len(password) < 16 {
			t.Errorf("super password %q: want a random one of at least 16 characters", password)
		}
		if got, want := string(secret.Data[build.SuperDigestKey]), zkclient.SuperDigest(password); got != want {
			t.Errorf("super digest = %q, want SuperDigest(password) = %q", got, want)
		}
	})

	var configCM corev1.ConfigMap
	t.Run("config", func(t *testing.T) {
		mustGet(t, c, ns, zk.Status.ConfigRevision, &configCM)
		ownedBy(t, &configCM, zk)
		if configCM.Immutable == nil || !*configCM.Immutable {
			t.Errorf("config ConfigMap %s is not immutable", configCM.Name)
		}
		if got, want := configCM.Data[build.ZooCfgKey], build.ZooCfg(zk); got != want {
			t.Errorf("zoo.cfg =\n%s\nwant\n%s", got, want)
		}
		if !strings.HasPrefix(configCM.Name, zk.Name+"-"+build.ComponentConfig+"-") {
			t.Errorf("config ConfigMap %s: want the framework's <name>-config-<hash>", configCM.Name)
		}
	})

	t.Run("members", func(t *testing.T) {
		var cm corev1.ConfigMap
		mustGet(t, c, ns, build.MembersConfigMapName(zk), &cm)
		ownedBy(t, &cm, zk)
		if got := membersOf(t, &cm); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("members ConfigMap lists %v, want [1 2 3]:\n%s", got, cm.Data[build.DynamicConfigKey])
		}
		if got, want := cm.Data[build.DynamicConfigKey], build.DynamicConfig(build.Members(zk, []int{1, 2, 3}, "")); got != want {
			t.Errorf("zoo.cfg.dynamic =\n%s\nwant\n%s", got, want)
		}
		// Every version the controller ever wrote listed the whole
		// ensemble: a server that starts on an empty or partial membership
		// does not find its peers.
		for i, v := range members.snapshot() {
			if v != cm.Data[build.DynamicConfigKey] {
				t.Errorf("version %d of the members ConfigMap was\n%s\nwant only\n%s", i, v, cm.Data[build.DynamicConfigKey])
			}
		}
	})

	t.Run("statefulset", func(t *testing.T) {
		var sts appsv1.StatefulSet
		mustGet(t, c, ns, zk.Name, &sts)
		ownedBy(t, &sts, zk)
		if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
			t.Errorf("StatefulSet replicas = %v, want 3", sts.Spec.Replicas)
		}
		if got, want := projectedConfigMaps(&sts), []string{zk.Status.ConfigRevision, build.MembersConfigMapName(zk)}; !slices.Equal(got, want) {
			t.Errorf("the config volume projects %v, want %v", got, want)
		}
		if got, want := sts.Spec.Template.Annotations[build.ConfigRevisionAnnotation], build.ConfigRevision(build.ConfigData(zk)); got != want {
			t.Errorf("pod template %s = %q, want %q", build.ConfigRevisionAnnotation, got, want)
		}
		if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
			t.Errorf("updateStrategy = %s, want OnDelete", sts.Spec.UpdateStrategy.Type)
		}
		if !maps.Equal(sts.Spec.Selector.MatchLabels, build.Selector(zk, build.ComponentServer)) {
			t.Errorf("selector = %v, want %v", sts.Spec.Selector.MatchLabels, build.Selector(zk, build.ComponentServer))
		}
	})

	t.Run("status", func(t *testing.T) {
		st := zk.Status
		if !slices.Equal(st.Members, []int32{1, 2, 3}) {
			t.Errorf("status.members = %v, want [1 2 3]", st.Members)
		}
		if want := fmt.Sprintf("zk-client.%s.svc.cluster.local:2181", ns); st.ClientEndpoint != want {
			t.Errorf("status.clientEndpoint = %q, want %q", st.ClientEndpoint, want)
		}
		if st.ObservedGeneration != zk.Generation {
			t.Errorf("status.observedGeneration = %d, want %d", st.ObservedGeneration, zk.Generation)
		}
		if st.Leader != "" || st.ReadyReplicas != 0 || len(st.Servers) != 0 {
			t.Errorf("status: leader %q readyReplicas %d servers %v, want none without pods", st.Leader, st.ReadyReplicas, st.Servers)
		}
		if st.Operation != nil {
			t.Errorf("status.operation = %+v, want none: a new cluster needs no flow", st.Operation)
		}
		for _, want := range []struct {
			typ    string
			status metav1.ConditionStatus
			reason string
		}{
			{framework.ConditionReady, metav1.ConditionFalse, ""},
			{commonv1.ConditionAvailable, metav1.ConditionFalse, commonv1.ReasonNoQuorum},
			{commonv1.ConditionProgressing, metav1.ConditionTrue, ""},
			{framework.ConditionSynced, metav1.ConditionTrue, framework.ReasonInSync},
			{framework.ConditionPaused, metav1.ConditionFalse, ""},
		} {
			got := condition(zk, want.typ)
			if got.Status != want.status || (want.reason != "" && got.Reason != want.reason) {
				t.Errorf("condition %s = %s/%s (%q), want %s/%s", want.typ, got.Status, got.Reason, got.Message, want.status, want.reason)
			}
			if got.Status != "" && got.ObservedGeneration != zk.Generation {
				t.Errorf("condition %s at generation %d, want %d", want.typ, got.ObservedGeneration, zk.Generation)
			}
		}
	})

	// In sync with nothing to do, the controller writes nothing: the
	// members ConfigMap and StatefulSet keep their versions across passes
	// (Resync is a second).
	t.Run("steady", func(t *testing.T) {
		var sts appsv1.StatefulSet
		var cm corev1.ConfigMap
		mustGet(t, c, ns, zk.Name, &sts)
		mustGet(t, c, ns, build.MembersConfigMapName(zk), &cm)
		consistently(t, "the children stay as they are", func() (bool, string) {
			var sts2 appsv1.StatefulSet
			var cm2 corev1.ConfigMap
			mustGet(t, c, ns, zk.Name, &sts2)
			mustGet(t, c, ns, build.MembersConfigMapName(zk), &cm2)
			return sts2.ResourceVersion == sts.ResourceVersion && cm2.ResourceVersion == cm.ResourceVersion,
				fmt.Sprintf("StatefulSet %s -> %s, members ConfigMap %s -> %s",
					sts.ResourceVersion, sts2.ResourceVersion, cm.ResourceVersion, cm2.ResourceVersion)
		})
	})
}

// TestPausedClusterCreatesNothing checks that a cluster created paused
// gets the Paused condition and nothing else, and that unpausing it
// creates its servers.
func TestPausedClusterCreatesNothing(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.Paused = true }))
	zk := waitCluster(t, c, ns, "zk", "Paused=True", func(zk *zkv1.ZookeeperCluster) bool {
		return condition(zk, framework.ConditionPaused).Status == metav1.ConditionTrue
	})
	if r := condition(zk, framework.ConditionPaused).Reason; r != framework.ReasonPaused {
		t.Errorf("Paused reason = %q, want %q", r, framework.ReasonPaused)
	}
	nothing := func() (bool, string) {
		for _, obj := range []struct {
			name string
			obj  client.Object
		}{
			{zk.Name, &appsv1.StatefulSet{}},
			{build.CredentialsSecretName(zk), &corev1.Secret{}},
			{build.HeadlessServiceName(zk), &corev1.Service{}},
			{build.ClientServiceName(zk), &corev1.Service{}},
			{build.MembersConfigMapName(zk), &corev1.ConfigMap{}},
			{zk.Name, &policyv1.PodDisruptionBudget{}},
		} {
			if get(t, c, ns, obj.name, obj.obj) {
				return false, fmt.Sprintf("%T %s exists", obj.obj, obj.name)
			}
		}
		var cms corev1.ConfigMapList
		if err := c.List(t.Context(), &cms, client.InNamespace(ns), client.MatchingLabels(build.Selector(zk, build.ComponentConfig))); err != nil {
			return false, err.Error()
		}
		if len(cms.Items) > 0 {
			return false, fmt.Sprintf("config ConfigMap %s exists", cms.Items[0].Name)
		}
		return true, ""
	}
	consistently(t, "a paused cluster creates nothing", nothing)
	zk = waitCluster(t, c, ns, "zk", "the cluster", func(*zkv1.ZookeeperCluster) bool { return true })
	if zk.Status.ConfigRevision != "" || len(zk.Status.Members) != 0 || zk.Status.ObservedGeneration != 0 {
		t.Errorf("status of a paused cluster: %s, want nothing observed", describeStatus(zk))
	}
	if s := condition(zk, framework.ConditionSynced); s.Status != "" {
		t.Errorf("Synced = %s/%s on a cluster never reconciled", s.Status, s.Reason)
	}

	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.Paused = false })
	zk = waitCluster(t, c, ns, "zk", "the unpaused cluster to settle", settled)
	if p := condition(zk, framework.ConditionPaused); p.Status != metav1.ConditionFalse {
		t.Errorf("Paused = %s after unpausing, want False", p.Status)
	}
	var sts appsv1.StatefulSet
	mustGet(t, c, ns, zk.Name, &sts)
}

// TestForeignCredentialsSecret checks that a cluster whose credentials
// Secret exists but belongs to someone else reports it, leaves the Secret
// alone and creates no servers (they would run with a digest the
// controller has no password for).
func TestForeignCredentialsSecret(t *testing.T) {
	cfg, c, ns := setup(t)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zk-credentials", Labels: map[string]string{"owner": "someone"}},
		Data:       map[string][]byte{build.SuperPasswordKey: []byte("theirs"), "other": []byte("x")},
	}
	create(t, c, foreign)
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", nil))
	zk := waitCluster(t, c, ns, "zk", "Synced=False", func(zk *zkv1.ZookeeperCluster) bool {
		return condition(zk, framework.ConditionSynced).Status == metav1.ConditionFalse
	})
	synced := condition(zk, framework.ConditionSynced)
	if synced.Reason != framework.ReasonTerminalError || !strings.Contains(synced.Message, "zk-credentials") {
		t.Errorf("Synced = %s %q, want %s naming Secret zk-credentials", synced.Reason, synced.Message, framework.ReasonTerminalError)
	}
	if r := condition(zk, framework.ConditionReady); r.Status == metav1.ConditionTrue {
		t.Errorf("Ready = True with a foreign credentials Secret")
	}

	consistently(t, "the foreign Secret stays untouched and no server is made", func() (bool, string) {
		var secret corev1.Secret
		mustGet(t, c, ns, foreign.Name, &secret)
		if secret.ResourceVersion != foreign.ResourceVersion {
			return false, fmt.Sprintf("the Secret changed: resourceVersion %s -> %s, owners %v, labels %v",
				foreign.ResourceVersion, secret.ResourceVersion, secret.OwnerReferences, secret.Labels)
		}
		if get(t, c, ns, "zk", &appsv1.StatefulSet{}) {
			return false, "the StatefulSet exists"
		}
		return true, ""
	})
	var secret corev1.Secret
	mustGet(t, c, ns, foreign.Name, &secret)
	if len(secret.OwnerReferences) != 0 || string(secret.Data[build.SuperPasswordKey]) != "theirs" || len(secret.Data) != 2 {
		t.Errorf("the foreign Secret changed: owners %v data %v", secret.OwnerReferences, secret.Data)
	}
}

// TestDeleteReclaimsVolumes checks deletion under both reclaim policies:
// the finalizer goes and the cluster with it; Delete deletes every volume
// claim of the cluster's servers, a departed member's beyond replicas
// included, and nothing else; Retain keeps them all.
func TestDeleteReclaimsVolumes(t *testing.T) {
	for _, policy := range []commonv1.ReclaimPolicy{commonv1.ReclaimDelete, commonv1.ReclaimRetain} {
		t.Run(string(policy), func(t *testing.T) {
			cfg, c, ns := setup(t)
			startManager(t, cfg, ns)

			create(t, c, newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.Storage.ReclaimPolicy = policy }))
			// A second cluster whose name starts like the first one's.
			create(t, c, newCluster(ns, "zk-a", nil))
			zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
			other := waitCluster(t, c, ns, "zk-a", "the other cluster to settle", settled)

			// The claims the StatefulSet would have made (data-zk-0..2), a
			// departed fifth member's, and claims that are not the cluster's
			// servers': another cluster's, one without the servers' labels,
			// one with them but not named after a server.
			servers := build.Selector(zk, build.ComponentServer)
			ours := []string{"data-zk-0", "data-zk-1", "data-zk-2", "data-zk-4"}
			claims := map[string]map[string]string{
				"data-zk-a-0": build.Selector(other, build.ComponentServer),
				"data-zk-7":   {"app": "unrelated"},
				"scratch-zk":  servers,
			}
			for _, name := range ours {
				claims[name] = servers
			}
			for name, labels := range claims {
				create(t, c, claim(ns, name, labels))
			}

			if err := c.Delete(t.Context(), zk); err != nil {
				t.Fatalf("delete the cluster: %v", err)
			}
			testenv.Eventually(t, "the cluster to be gone", func() (bool, string) {
				var got zkv1.ZookeeperCluster
				if get(t, c, ns, "zk", &got) {
					return false, fmt.Sprintf("finalizers %v, status %s", got.Finalizers, describeStatus(&got))
				}
				return true, ""
			})

			for name := range claims {
				var pvc corev1.PersistentVolumeClaim
				exists := get(t, c, ns, name, &pvc)
				// kube-apiserver's StorageObjectInUseProtection puts
				// kubernetes.io/pvc-protection on every claim, and no
				// controller here removes it: a deleted claim lingers with a
				// deletion timestamp.
				deleted := !exists || pvc.DeletionTimestamp != nil
				wantDeleted := policy == commonv1.ReclaimDelete && slices.Contains(ours, name)
				if deleted != wantDeleted {
					t.Errorf("claim %s: deleted %t, want %t (reclaim policy %s)", name, deleted, wantDeleted, policy)
				}
			}
			// The other cluster is untouched.
			other = waitCluster(t, c, ns, "zk-a", "the other cluster", func(*zkv1.ZookeeperCluster) bool { return true })
			if !other.DeletionTimestamp.IsZero() {
				t.Errorf("the other cluster is being deleted")
			}
		})
	}
}

// claim returns a volume claim ns/name with labels.
func claim(ns, name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: maps.Clone(labels)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}

// TestConfigChange checks that a change of spec.config makes a new config
// ConfigMap, named in status.configRevision, and a new pod template
// (annotation and volume), while the members ConfigMap stays as it is.
func TestConfigChange(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", nil))
	before := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	var stsBefore appsv1.StatefulSet
	var membersBefore corev1.ConfigMap
	mustGet(t, c, ns, "zk", &stsBefore)
	mustGet(t, c, ns, build.MembersConfigMapName(before), &membersBefore)

	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) {
		zk.Spec.Config = map[string]string{"maxClientCnxns": "100", "tickTime": "3000"}
	})
	after := waitCluster(t, c, ns, "zk", "the new config to be observed", func(zk *zkv1.ZookeeperCluster) bool {
		return settled(zk) && zk.Status.ConfigRevision != before.Status.ConfigRevision
	})

	var configCM corev1.ConfigMap
	mustGet(t, c, ns, after.Status.ConfigRevision, &configCM)
	zooCfg := configCM.Data[build.ZooCfgKey]
	if zooCfg != build.ZooCfg(after) || !strings.Contains(zooCfg, "\nmaxClientCnxns=100\n") || !strings.Contains(zooCfg, "\ntickTime=3000\n") {
		t.Errorf("new zoo.cfg =\n%s\nwant\n%s", zooCfg, build.ZooCfg(after))
	}
	if configCM.Immutable == nil || !*configCM.Immutable {
		t.Errorf("config ConfigMap %s is not immutable", configCM.Name)
	}

	var sts appsv1.StatefulSet
	testenv.Eventually(t, "the StatefulSet to roll to the new config", func() (bool, string) {
		mustGet(t, c, ns, "zk", &sts)
		got := sts.Spec.Template.Annotations[build.ConfigRevisionAnnotation]
		return got == build.ConfigRevision(configCM.Data), fmt.Sprintf("annotation %q", got)
	})
	if old := stsBefore.Spec.Template.Annotations[build.ConfigRevisionAnnotation]; old == sts.Spec.Template.Annotations[build.ConfigRevisionAnnotation] {
		t.Errorf("the pod template's config revision stayed %q", old)
	}
	if got, want := projectedConfigMaps(&sts), []string{after.Status.ConfigRevision, build.MembersConfigMapName(after)}; !slices.Equal(got, want) {
		t.Errorf("the config volume projects %v, want %v", got, want)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("StatefulSet replicas = %v, want 3", sts.Spec.Replicas)
	}

	var membersAfter corev1.ConfigMap
	mustGet(t, c, ns, build.MembersConfigMapName(after), &membersAfter)
	if membersAfter.ResourceVersion != membersBefore.ResourceVersion ||
		membersAfter.Data[build.DynamicConfigKey] != membersBefore.Data[build.DynamicConfigKey] {
		t.Errorf("the members ConfigMap changed (resourceVersion %s -> %s):\n%s\nthen\n%s",
			membersBefore.ResourceVersion, membersAfter.ResourceVersion,
			membersBefore.Data[build.DynamicConfigKey], membersAfter.Data[build.DynamicConfigKey])
	}
	if !slices.Equal(after.Status.Members, []int32{1, 2, 3}) {
		t.Errorf("status.members = %v, want [1 2 3]", after.Status.Members)
	}
	// The previous revision stays for a rollback (ConfigRevisions keeps 3).
	var old corev1.ConfigMap
	if !get(t, c, ns, before.Status.ConfigRevision, &old) {
		t.Errorf("the previous config ConfigMap %s is gone", before.Status.ConfigRevision)
	}
	// Without a StatefulSet controller the new revision is not known, so
	// no rolling restart starts.
	if after.Status.Operation != nil {
		t.Errorf("status.operation = %+v, want none before the StatefulSet controller saw the template", after.Status.Operation)
	}
}

// TestLostStatusKeepsMembership checks what happens when status.members is
// lost while no server answers, as after a restore from a backup (which
// does not restore status) or on a cache that has not seen the status
// write of the pass that created the StatefulSet: the controller must not
// write an empty membership into the members ConfigMap, which the servers
// start from, nor start a scale flow from zero members (that flow waits
// for a quorum the empty membership never gets).
func TestLostStatusKeepsMembership(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", nil))
	zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	var before corev1.ConfigMap
	mustGet(t, c, ns, build.MembersConfigMapName(zk), &before)
	members := recordMembers(t, c, ns, build.MembersConfigMapName(zk))

	lost := zk.DeepCopy()
	lost.Status.Members = nil
	if err := c.Status().Patch(t.Context(), lost, client.MergeFrom(zk)); err != nil {
		t.Fatalf("clear status.members: %v", err)
	}
	zk = waitCluster(t, c, ns, "zk", "the controller to act on the lost membership", func(zk *zkv1.ZookeeperCluster) bool {
		return len(zk.Status.Members) > 0 || zk.Status.Operation != nil
	})
	if !slices.Equal(zk.Status.Members, []int32{1, 2, 3}) || zk.Status.Operation != nil {
		t.Errorf("after status.members was lost: %s, want members [1 2 3] and no operation", describeStatus(zk))
	}
	// Give a wrong write time to show.
	consistently(t, "the members ConfigMap keeps the ensemble", func() (bool, string) {
		var cm corev1.ConfigMap
		mustGet(t, c, ns, build.MembersConfigMapName(zk), &cm)
		if got := cm.Data[build.DynamicConfigKey]; got != before.Data[build.DynamicConfigKey] {
			return false, fmt.Sprintf("zoo.cfg.dynamic is\n%s\nwas\n%s", got, before.Data[build.DynamicConfigKey])
		}
		return true, ""
	})
	for i, v := range members.snapshot() {
		if v != before.Data[build.DynamicConfigKey] {
			t.Errorf("version %d of the members ConfigMap was\n%s\nwant only\n%s", i, v, before.Data[build.DynamicConfigKey])
		}
	}
}

// update changes the cluster with mutate, retrying on conflicts.
func update(t *testing.T, c client.Client, ns, name string, mutate func(zk *zkv1.ZookeeperCluster)) {
	t.Helper()
	testenv.Update(t, c, &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, mutate)
}

// TestBootstrapLeavesDepartedMembersOut re-creates a cluster over volumes
// an earlier incarnation left under reclaim policy Retain, two of them
// marked as departed members': the cluster starts without those servers
// (their data stopped when they left, and as voters from the start they
// could elect a leader that lacks newer transactions), and leaves them to
// the scale flow.
func TestBootstrapLeavesDepartedMembersOut(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)

	zk := newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 5 })
	servers := build.Selector(zk, build.ComponentServer)
	for ordinal := range 5 {
		labels := maps.Clone(servers)
		if ordinal >= 3 {
			labels[zookeeper.DepartedLabel] = "true"
		}
		create(t, c, claim(ns, fmt.Sprintf("data-zk-%d", ordinal), labels))
	}
	// The StatefulSet as created: the scale flow that follows may add the
	// departed servers back (as joiners) before a Get would see it.
	w, err := c.Watch(t.Context(), &appsv1.StatefulSetList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watch StatefulSets: %v", err)
	}
	defer w.Stop()
	create(t, c, zk)
	select {
	case ev := <-w.ResultChan():
		sts, ok := ev.Object.(*appsv1.StatefulSet)
		if !ok || ev.Type != watch.Added {
			t.Fatalf("first StatefulSet event: %s %T", ev.Type, ev.Object)
		}
		if got := *sts.Spec.Replicas; got != 3 {
			t.Errorf("StatefulSet created with replicas = %d, want 3: servers 4 and 5 left before", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no StatefulSet after 30 s")
	}
	var cm corev1.ConfigMap
	mustGet(t, c, ns, build.MembersConfigMapName(zk), &cm)
	if got := membersOf(t, &cm); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("members ConfigMap lists %v, want [1 2 3]", got)
	}
	waitCluster(t, c, ns, "zk", "status.members [1 2 3]", func(zk *zkv1.ZookeeperCluster) bool {
		return slices.Equal(zk.Status.Members, []int32{1, 2, 3})
	})
}

// TestChildrenKeptDuringFlows scales a cluster whose servers never serve
// (the API server runs no pods), so the scale flow waits in change-members
// for the joining server: the step holds the StatefulSet one larger
// (status.operation.held), the declarative phase starts that server from
// the hold (the StatefulSet grows by one, the members ConfigMap carries its
// joining line) and repairs the Services and the budget deleted under it,
// without waiting for the flow to end.
func TestChildrenKeptDuringFlows(t *testing.T) {
	cfg, c, ns := setup(t)
	startManager(t, cfg, ns)

	create(t, c, newCluster(ns, "zk", nil))
	waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.Replicas = 5 })
	waitCluster(t, c, ns, "zk", "the scale flow to wait in change-members", func(zk *zkv1.ZookeeperCluster) bool {
		op := zk.Status.Operation
		return op != nil && op.Name == "scale" && op.Step == "change-members" && op.Phase == commonv1.PhaseRunning
	})
	zk := waitCluster(t, c, ns, "zk", "change-members to hold the StatefulSet for server 4", func(zk *zkv1.ZookeeperCluster) bool {
		held, ok := zk.Status.Operation.HeldReplicas("zk")
		return ok && held == 4
	})
	var sts appsv1.StatefulSet
	testenv.Eventually(t, "the joining server's pod to be asked for", func() (bool, string) {
		mustGet(t, c, ns, "zk", &sts)
		return *sts.Spec.Replicas == 4, fmt.Sprintf("replicas %d", *sts.Spec.Replicas)
	})
	var members corev1.ConfigMap
	mustGet(t, c, ns, build.MembersConfigMapName(zk), &members)
	if joining := members.Data[build.JoiningConfigKey]; !strings.HasPrefix(joining, "server.4=") {
		t.Errorf("joining line %q, want server 4's", joining)
	}
	if got := membersOf(t, &members); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("members %v, want [1 2 3] until server 4 serves", got)
	}

	for _, obj := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: build.ClientServiceName(zk)}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: zk.Name}},
	} {
		if err := c.Delete(t.Context(), obj); err != nil {
			t.Fatalf("delete %T %s: %v", obj, obj.GetName(), err)
		}
		testenv.Eventually(t, fmt.Sprintf("%T %s to be re-applied during the flow", obj, obj.GetName()), func() (bool, string) {
			err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
			return err == nil && obj.GetDeletionTimestamp() == nil, fmt.Sprint(err)
		})
	}
	zk = &zkv1.ZookeeperCluster{}
	mustGet(t, c, ns, "zk", zk)
	if op := zk.Status.Operation; op.Step != "change-members" || op.Phase != commonv1.PhaseRunning {
		t.Errorf("operation %s/%s, want still waiting in change-members", op.Step, op.Phase)
	}
}

// TestNetworkPolicyFollowsSpec: spec.networkPolicy.enabled makes the
// servers' NetworkPolicy, false deletes it, and the operator's peer names
// the namespace it runs in.
func TestNetworkPolicyFollowsSpec(t *testing.T) {
	cfg, c, ns := setup(t)
	startManagerWith(t, cfg, ns, zookeeper.Options{Resync: time.Second, OperatorNamespace: "steward-system"})

	create(t, c, newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.NetworkPolicy.Enabled = true }))
	zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	var np networkingv1.NetworkPolicy
	testenv.Eventually(t, "the NetworkPolicy", func() (bool, string) { return get(t, c, ns, zk.Name, &np), "absent" })
	ownedBy(t, &np, zk)
	if want := build.NetworkPolicy(zk, framework.OperatorPeer("steward-system")); !equality.Semantic.DeepEqual(np.Spec, want.Spec) {
		t.Errorf("NetworkPolicy spec\n%+v\nwant\n%+v", np.Spec, want.Spec)
	}

	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.NetworkPolicy.Enabled = false })
	testenv.Eventually(t, "the NetworkPolicy deleted", func() (bool, string) {
		var live networkingv1.NetworkPolicy
		return !get(t, c, ns, zk.Name, &live), "still there"
	})
	// Another's NetworkPolicy of the same namespace is not the cluster's.
	other := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}, Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}}}}
	create(t, c, other)
	before := zk.Status.ObservedGeneration
	update(t, c, ns, "zk", func(zk *zkv1.ZookeeperCluster) { zk.Spec.NetworkPolicy.ClientsFrom = other.Spec.Ingress[0].From })
	waitCluster(t, c, ns, "zk", "a pass at the new generation", func(zk *zkv1.ZookeeperCluster) bool {
		return settled(zk) && zk.Status.ObservedGeneration > before
	})
	mustGet(t, c, ns, "theirs", &networkingv1.NetworkPolicy{})
}
