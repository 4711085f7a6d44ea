//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// moLogSetName is the LogSet the log service lifecycle works on.
const moLogSetName = "mo-log"

// MatrixOne's specs, on real MatrixOne (images/matrixone, mo-service built
// from MatrixOne's Go module).
func init() {
	registerSystem(systems.MatrixOne, systemSpec{
		addToScheme: mov1.AddToScheme,
		smoke:       matrixoneSmoke,
		specs: []spec{{"image", matrixoneImageSpec}, {"log service", moLogSetSpec}, {"cluster", moClusterSpec}, {"umbrella", moUmbrellaSpec}, {"S3", moS3Spec},
			{"upgrade", moUpgradeSpec}},
		chaos: matrixoneChaos,
	})
}

// matrixoneSmoke is MatrixOne's smoke: a MatrixOneCluster of one log
// store, the TN, one CN and the proxy Ready, a statement run as root
// through the address and with the password its status names, deleted.
// About 2 GiB of memory limits.
var matrixoneSmoke = smokeSpec{
	resource: "matrixonecluster", name: "mo", ready: 8 * time.Minute,
	manifest: func(t *testing.T, in specInput, ns string) string {
		return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: MatrixOneCluster
metadata: {name: mo, namespace: %s}
spec:
  image: %s
  imagePullPolicy: Never
  sharedStorage: {fileSystem: {claimName: mo-shared, size: 1Gi}}
  logService: {replicas: 1, resources: {limits: {memory: 384Mi}}, storage: {size: 256Mi, reclaimPolicy: Delete}}
  tn: {resources: {limits: {memory: 768Mi}}, storage: {size: 512Mi}}
  cnGroups: [{name: cn, replicas: 1, resources: {limits: {memory: 640Mi}}, storage: {size: 256Mi}}]
  proxy: {resources: {limits: {memory: 192Mi}}}
`, ns, in.image(t, "matrixone"))
	},
	request: func(ns string) error {
		st, err := kubectl("get", "matrixonecluster", "-n", ns, "mo", "-o", "jsonpath={.status.sqlAddress} {.status.rootPasswordSecret}")
		if err != nil {
			return fmt.Errorf("%w: %s", err, st)
		}
		address, secret, ok := strings.Cut(strings.TrimSpace(st), " ")
		if !ok || address == "" || secret == "" {
			return fmt.Errorf("status names no SQL address and password Secret: %q", st)
		}
		password, err := kubectl("get", "secret", "-n", ns, secret, "-o", "jsonpath={.data.password}")
		if err != nil {
			return fmt.Errorf("%w: %s", err, password)
		}
		pw, err := base64.StdEncoding.DecodeString(password)
		if err != nil {
			return err
		}
		out, err := moSQL(ns, address, string(pw), "select 40 + 2")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "42") {
			return fmt.Errorf("select 40 + 2 through the proxy answered %q", out)
		}
		return nil
	},
}

// moLogSetSpec runs a LogSet of three real log stores through its life,
// with a TN, a CN and a proxy on it and a client writing rows through
// the proxy during each step (every acknowledged row read back after it):
// creation (HAKeeper bootstrapped by its three initial members, both log
// shards led), the pod of shard 1's leader killed (it comes back as the
// same store), a configuration change rolled one store at a time (never
// two down at once), a store whose volume is lost refused and then
// replaced, a fourth store added and removed (every role restarts onto
// the new HAKeeper addresses), the stores' volumes grown, and deletion
// with the volumes retained, then re-creation under the same name, which
// finds the stores' raft logs (the shards' terms go on from where they
// were) and every row. About 2.8 GiB of memory limits.
func moLogSetSpec(t *testing.T, in specInput) {
	installOperator(t)
	m := &moLogScenario{scenario: newScenario(t, "mo", "logset", moLogSetName, "log"), image: in.image(t, "matrixone")}
	m.sql = &moCluster{scenario: m.scenario, image: m.image}
	m.runSteps(t, m.dumpState, []step{
		{"create", m.create},
		{"a killed log pod comes back as the same store, under writes", m.underWrites(m.killLeader)},
		{"a configuration change rolls one store at a time, under writes", m.underWrites(m.rollConfig)},
		{"a store whose volume is lost is refused, then replaced, under writes", m.underWrites(m.volumeLost)},
		{"log stores 3 to 4 to 3 under writes", m.underWrites(m.scaleStores)},
		{"volumes grow, no store restarts, under writes", m.underWrites(m.volumesGrow)},
		{"delete with retained volumes and re-create", m.recreate},
	})
}

type moLogScenario struct {
	scenario
	image string
	// term is shard 1's raft term before the set was deleted.
	term int64
	// sql is the TN, CN and proxy on the LogSet, and the writer through
	// them.
	sql *moCluster
}

// underWrites runs step while the client writes through the proxy
// (moCluster.underWrites): every acknowledged row must be there after.
func (m *moLogScenario) underWrites(step func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) {
		m.sql.t = t
		m.sql.underWrites(t, func() { step(t) })
	}
}

// startSQL applies the TN, CN and proxy on the LogSet and creates the
// table the writer fills.
func (m *moLogScenario) startSQL(t *testing.T) {
	m.sql.t = t
	if out, err := kubectlStdin(moSQLSets(m.ns, m.image, 1, "info"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	m.sql.waitAllReady(6 * time.Minute)
	eventually(t, 2*time.Minute, "SQL through the proxy", func(context.Context) error {
		_, err := m.sql.sql("create database if not exists e2e")
		return err
	})
	if _, err := m.sql.sql("create table if not exists e2e.t (id int primary key)"); err != nil {
		fatalNow(t, err)
	}
}

// manifest is the LogSet: three stores, small caches from a 384 MiB
// limit, MatrixOne's tracing and metrics off (they would write to the
// shared storage every few seconds). logLevel is the user's [log] level.
// A failed store is replaced after 45 s, HAKeeper expires one after 30 s
// (10 m and 5 m by default): the volume-lost step waits for both.
func (m *moLogScenario) manifest(logLevel string) string {
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: LogSet
metadata:
  name: %s
  namespace: %s
spec:
  replicas: 3
  storeFailureTimeout: 45s
  image: %s
  imagePullPolicy: Never
  resources:
    limits:
      memory: 384Mi
  storage:
    size: 256Mi
  sharedStorage:
    fileSystem:
      claimName: mo-shared
  config: |
    [log]
    level = %q
    [observability]
    disableTrace = true
    disableMetric = true
    [logservice.HAKeeperConfig]
    log-store-timeout = "30s"
`, moLogSetName, m.ns, m.image, logLevel)
}

func (m *moLogScenario) create(t *testing.T) {
	createSharedClaim(t, m.ns)
	start := time.Now()
	if out, err := kubectlStdin(m.manifest("info"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	l := m.waitReady(5 * time.Minute)
	t.Logf("Ready after %s: HAKeeper %s, shards %+v", time.Since(start).Round(time.Second), l.Status.HAKeeper, l.Status.Shards)
	if l.Status.HAKeeper != wire.StateRunning || len(l.Status.Shards) != 2 || l.Status.Bootstrap == nil ||
		len(l.Status.Bootstrap.InitialMembers) != 3 || len(l.Status.ServiceAddresses) != 3 {
		errorf(t, "status %+v", l.Status)
	}
	for i, s := range l.Status.Stores {
		pod := fmt.Sprintf("%s-%d", moLogSetName, i)
		if s.Pod != pod || s.UUID != wire.StoreID(m.ns, pod) || s.State != mov1.StoreUp || s.Replicas != 2 {
			errorf(t, "store %d: %+v", i, s)
		}
	}
	for _, sh := range l.Status.Shards {
		if sh.Leader == "" || sh.Replicas != 3 || sh.Of != 3 {
			errorf(t, "shard %+v", sh)
		}
	}
	m.startClient()
	m.startSQL(t)
}

// killLeader deletes the pod of the store leading shard 1 (the first log
// shard): its pod comes back under its name, with its volume, and HAKeeper
// hears from the same store again.
func (m *moLogScenario) killLeader(t *testing.T) {
	l := m.waitReady(time.Minute)
	leader := l.Status.Shards[1].Leader
	old := m.podUID(leader)
	if err := env.client.CoreV1().Pods(m.ns).Delete(context.Background(), leader, metav1.DeleteOptions{}); err != nil {
		fatalNow(t, err)
	}
	start := time.Now()
	eventually(t, 3*time.Minute, leader+" re-created and its store up", func(context.Context) error {
		if uid := m.podUID(leader); uid == "" || uid == old {
			return fmt.Errorf("%s not re-created", leader)
		}
		l := &mov1.LogSet{}
		m.getInto(l)
		if err := settled(l.Generation, &l.Status.StatusCore); err != nil {
			return err
		}
		for _, s := range l.Status.Stores {
			if s.Pod == leader && (s.State != mov1.StoreUp || s.UUID != wire.StoreID(m.ns, leader)) {
				return fmt.Errorf("store %+v", s)
			}
		}
		return nil
	})
	l = m.waitReady(time.Minute)
	t.Logf("%s back and Ready after %s; shard 1 now led by %s (term %d)", leader, time.Since(start).Round(time.Second),
		l.Status.Shards[1].Leader, l.Status.Shards[1].Term)
}

// rollConfig changes the user's configuration: every store restarts onto
// the new template, one at a time, never two log pods down at once.
func (m *moLogScenario) rollConfig(t *testing.T) {
	before := map[string]types.UID{}
	for i := range 3 {
		pod := fmt.Sprintf("%s-%d", moLogSetName, i)
		before[pod] = m.podUID(pod)
	}
	start := time.Now()
	if out, err := kubectlStdin(m.manifest("debug"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	mostDown := 0
	eventually(t, 6*time.Minute, "every store restarted onto the new configuration, the set Ready", func(ctx context.Context) error {
		pods, err := env.client.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=log"})
		if err != nil {
			return err
		}
		down := 3
		restarted := 0
		for _, p := range pods.Items {
			if podReady(&p) && p.DeletionTimestamp == nil {
				down--
			}
			if p.UID != before[p.Name] {
				restarted++
			}
		}
		mostDown = max(mostDown, down)
		l := &mov1.LogSet{}
		m.getInto(l)
		if restarted < 3 {
			return fmt.Errorf("%d of 3 stores restarted", restarted)
		}
		return settled(l.Generation, &l.Status.StatusCore)
	})
	t.Logf("Rolled in %s; at most %d log pod(s) down at once", time.Since(start).Round(time.Second), mostDown)
	if mostDown > 1 {
		errorf(t, "%d log pods were down at once", mostDown)
	}
}

// volumeLost deletes the volume claim and the pod of a store that leads no
// shard, as when its node and local volume are gone: the pod comes back on
// an empty volume, and mo-agent refuses to start it as the store HAKeeper
// knows (it would rejoin its shards with none of what it acknowledged).
// Once it has been down for storeFailureTimeout, with the other two up, the
// operator replaces it: a new UUID, a new volume, to which HAKeeper gives
// the replicas of the store it expired. The set is Ready again with every
// shard on three stores.
func (m *moLogScenario) volumeLost(t *testing.T) {
	l := m.waitReady(time.Minute)
	var pod string
	for _, s := range l.Status.Stores {
		if !slices.ContainsFunc(l.Status.Shards, func(sh mov1.LogShardStatus) bool { return sh.Leader == s.Pod }) {
			pod = s.Pod
		}
	}
	old := wire.StoreID(m.ns, pod)
	start := time.Now()
	if out, err := kubectl("delete", "pvc", "-n", m.ns, "data-"+pod, "--wait=false"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	if out, err := kubectl("delete", "pod", "-n", m.ns, pod, "--wait=false"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 3*time.Minute, pod+" refused to start on an empty volume", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(m.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.ContainerStatuses {
			if term := c.LastTerminationState.Terminated; c.Name == "mo" && term != nil {
				if !strings.Contains(term.Message, "HAKeeper knows store "+old) {
					return fmt.Errorf("the container ended otherwise: %s", term.Message)
				}
				t.Logf("%s refused after %s: %s", pod, time.Since(start).Round(time.Second), lastLine(term.Message))
				return nil
			}
		}
		return fmt.Errorf("%s: %s", p.Status.Phase, p.Status.Message)
	})
	eventually(t, 2*time.Minute, "StoresHealthy=False while "+pod+" is down", func(context.Context) error {
		l := &mov1.LogSet{}
		m.getInto(l)
		c := meta.FindStatusCondition(l.Status.Conditions, mov1.ConditionStoresHealthy)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, pod) {
			return fmt.Errorf("StoresHealthy %+v", c)
		}
		return nil
	})
	newStore := wire.StoreID(m.ns, pod+"#1")
	eventually(t, 4*time.Minute, pod+" replaced by store "+newStore+", the set Ready", func(context.Context) error {
		l := &mov1.LogSet{}
		m.getInto(l)
		if err := settled(l.Generation, &l.Status.StatusCore); err != nil {
			return err
		}
		for _, s := range l.Status.Stores {
			if s.Pod == pod && (s.UUID != newStore || s.State != mov1.StoreUp || s.Replicas != 2) {
				return fmt.Errorf("store %+v", s)
			}
		}
		for _, sh := range l.Status.Shards {
			if sh.Replicas != 3 || sh.Leader == "" {
				return fmt.Errorf("shard %+v", sh)
			}
		}
		if !meta.IsStatusConditionTrue(l.Status.Conditions, mov1.ConditionStoresHealthy) {
			return fmt.Errorf("StoresHealthy is not True: %+v", meta.FindStatusCondition(l.Status.Conditions, mov1.ConditionStoresHealthy))
		}
		return nil
	})
	out, _ := kubectl("get", "events", "-n", m.ns, "--field-selector", "reason="+mov1.EventStoreReplaced, "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(out, newStore) {
		errorf(t, "no StoreReplaced event names %s: %q", newStore, out)
	}
	t.Logf("%s replaced and every shard on three stores %s after its volume was lost; %s", pod, time.Since(start).Round(time.Second), out)
}

// scaleStores adds a fourth store, which joins HAKeeper without replicas
// (HAKeeper places replicas only where one is missing), then removes it:
// its pod stops, its volume claim is deleted once no shard counts it a
// member, and its pod's next store has a new UUID. Each change of the
// stores changes the HAKeeper addresses the stores are configured with,
// so the others restart onto them, one at a time (the flows are logged).
// Every shard has a leader and its three replicas at the end of each.
func (m *moLogScenario) scaleStores(t *testing.T) {
	m.waitReady(time.Minute)
	const added = moLogSetName + "-3"
	start := time.Now()
	// flows logs each flow's step and phase as they change.
	seen := ""
	flows := func(l *mov1.LogSet) {
		if op := l.Status.Operation; op != nil && op.Name+"/"+op.Step+"/"+string(op.Phase) != seen {
			seen = op.Name + "/" + op.Step + "/" + string(op.Phase)
			t.Logf("%s at %q, %s, after %s", op.Name, op.Step, op.Phase, time.Since(start).Round(time.Second))
		}
	}
	m.patch(`{"spec":{"replicas":4}}`)
	eventually(t, 4*time.Minute, added+" up without replicas, the set Ready", func(context.Context) error {
		l := &mov1.LogSet{}
		m.getInto(l)
		flows(l)
		if err := settled(l.Generation, &l.Status.StatusCore); err != nil {
			return err
		}
		if len(l.Status.Stores) != 4 || l.Status.Stores[3].Pod != added || l.Status.Stores[3].State != mov1.StoreUp ||
			l.Status.Stores[3].UUID != wire.StoreID(m.ns, added) {
			return fmt.Errorf("stores %+v", l.Status.Stores)
		}
		return m.shardsWhole(l)
	})
	t.Logf("%s added and Ready after %s", added, time.Since(start).Round(time.Second))

	start = time.Now()
	m.patch(`{"spec":{"replicas":3}}`)
	eventually(t, 5*time.Minute, added+" removed, its volume claim deleted, the set Ready", func(ctx context.Context) error {
		l := &mov1.LogSet{}
		m.getInto(l)
		flows(l)
		if err := settled(l.Generation, &l.Status.StatusCore); err != nil {
			return err
		}
		if len(l.Status.Stores) != 3 {
			return fmt.Errorf("stores %+v", l.Status.Stores)
		}
		if _, err := env.client.CoreV1().PersistentVolumeClaims(m.ns).Get(ctx, "data-"+added, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("the claim data-%s is still there", added)
		}
		return m.shardsWhole(l)
	})
	stores, err := env.client.CoreV1().ConfigMaps(m.ns).Get(context.Background(), moLogSetName+"-stores", metav1.GetOptions{})
	if err != nil || stores.Data[added] == "" || stores.Data[added] == wire.StoreID(m.ns, added) {
		errorf(t, "the stores ConfigMap gives %s no new store: %v %v", added, err, stores.Data)
	}
	out, _ := kubectl("get", "events", "-n", m.ns, "--field-selector", "reason="+mov1.EventStoreRemoved, "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(out, added) {
		errorf(t, "no StoreRemoved event names %s: %q", added, out)
	}
	t.Logf("%s removed and the set Ready after %s: %s", added, time.Since(start).Round(time.Second), out)
}

// shardsWhole says which shard of l has no leader or fewer than three
// replicas running; nil when none.
func (m *moLogScenario) shardsWhole(l *mov1.LogSet) error {
	for _, sh := range l.Status.Shards {
		if sh.Replicas != 3 || sh.Leader == "" {
			return fmt.Errorf("shard %+v", sh)
		}
	}
	return nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// recreate deletes the set under the default reclaim policy (Retain): its
// volume claims stay; the set re-created under its name starts the same
// stores on them, and the shards go on from their terms.
func (m *moLogScenario) recreate(t *testing.T) {
	m.sql.t = t
	out, err := m.sql.sql("select count(*) from e2e.t")
	if err != nil {
		fatalNow(t, err)
	}
	rows := strings.TrimSpace(out)
	// The sets on the LogSet go first (their volumes retained too), as
	// a cluster's do.
	for _, set := range []string{"proxyset/" + moClusterProxy, "cnset/" + moClusterCN, "tnset/" + moClusterTN} {
		if out, err := kubectl("delete", set, "-n", m.ns, "--wait=true", "--timeout=2m"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	}
	l := m.waitReady(time.Minute)
	m.term = l.Status.Shards[1].Term
	if out, err := kubectl("delete", "logset", moLogSetName, "-n", m.ns, "--wait=true", "--timeout=2m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	m.waitPods(0)
	claims, err := env.client.CoreV1().PersistentVolumeClaims(m.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	var names []string
	for _, c := range claims.Items {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	want := []string{"data-mo-cn-0", "data-mo-log-0", "data-mo-log-1", "data-mo-log-2", "data-mo-tn-0", "mo-shared"}
	if !slices.Equal(names, want) {
		fatalf(t, "claims after the deletion: %v, want %v", names, want)
	}
	start := time.Now()
	if out, err := kubectlStdin(m.manifest("debug"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	l = m.waitReady(5 * time.Minute)
	t.Logf("Re-created and Ready after %s; shard 1 at term %d (%d before the deletion)",
		time.Since(start).Round(time.Second), l.Status.Shards[1].Term, m.term)
	// HAKeeper, itself restarted from its raft log, first reports the
	// term it recorded; the stores' heartbeats bring the new one. Stores
	// started empty would count terms from 1 again.
	eventually(t, 2*time.Minute, fmt.Sprintf("shard 1 beyond term %d (stores on their old raft logs)", m.term), func(context.Context) error {
		m.getInto(l)
		if len(l.Status.Shards) < 2 {
			return fmt.Errorf("shards %+v", l.Status.Shards)
		}
		if term := l.Status.Shards[1].Term; term <= m.term {
			return fmt.Errorf("shard 1 at term %d", term)
		}
		return nil
	})
	t.Logf("Shard 1 at term %d", l.Status.Shards[1].Term)
	m.startSQL(t)
	var after string
	eventually(t, 2*time.Minute, "the rows read back", func(context.Context) error {
		out, err := m.sql.sql("select count(*) from e2e.t")
		after = strings.TrimSpace(out)
		return err
	})
	t.Logf("The TN, CN and proxy re-created on it; %s rows before the deletion, %s after", rows, after)
	if n, _ := strconv.Atoi(rows); n == 0 || after != rows {
		errorf(t, "%s rows after the re-creation, %s before", after, rows)
	}
}

// createSharedClaim creates mo-shared, the ReadWriteMany claim every
// MatrixOne spec's cluster uses as its shared storage.
func createSharedClaim(t *testing.T, ns string) {
	t.Helper()
	if _, err := env.client.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "mo-shared"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
}

// waitReady waits until the LogSet is Ready at its generation.
// volumesGrow grows the stores' volumes (scenario.volumesGrow) from 256Mi
// to 512Mi.
func (m *moLogScenario) volumesGrow(t *testing.T) {
	m.scenario.volumesGrow(t, volumeGrowth{
		sizePatch: storageSize,
		smaller:   "128Mi",
		larger:    "512Mi",
		selector:  instanceSelector("matrixone", moLogSetName),
		waitReady: func() { m.waitReady(2 * time.Minute) },
	})
}

func (m *moLogScenario) waitReady(timeout time.Duration) *mov1.LogSet {
	m.t.Helper()
	l := &mov1.LogSet{}
	eventually(m.t, timeout, "the LogSet Ready", func(context.Context) error {
		m.getInto(l)
		return settled(l.Generation, &l.Status.StatusCore)
	})
	return l
}

// podUID is the UID of the pod name, "" when there is none.
func (m *moLogScenario) podUID(name string) types.UID { return livePodUID(m.ns, name) }

// livePodUID is the UID of the pod ns/name, "" when there is none or it is
// being deleted.
func livePodUID(ns, name string) types.UID {
	p, err := env.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		return ""
	}
	return p.UID
}
