package workload_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/testenv"
)

var server testenv.APIServer

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		name, prefix string
		ordinal      int
		ok           bool
	}{
		{"zk-0", "zk-", 0, true},
		{"zk-2", "zk-", 2, true},
		{"zk-14", "zk-", 14, true},
		{"zk-", "zk-", 0, false},
		{"zk", "zk-", 0, false},
		{"zk-01", "zk-", 0, false}, // not what a StatefulSet names a pod
		{"zk--1", "zk-", 0, false},
		{"zk-+1", "zk-", 0, false},
		{"zk- 1", "zk-", 0, false},
		{"zk-1a", "zk-", 0, false},
		{"zk-a-0", "zk-", 0, false}, // the pod of cluster zk-a
		{"zk-1-0", "zk-", 0, false},
		{"other-0", "zk-", 0, false},
		{"xzk-0", "zk-", 0, false},
		{"zk-99999999999999999999", "zk-", 0, false}, // overflows int
		{"data-zk-3", "data-zk-", 3, true},
	} {
		ordinal, ok := workload.Ordinal(tc.name, tc.prefix)
		if ok != tc.ok || (ok && ordinal != tc.ordinal) {
			t.Errorf("Ordinal(%q, %q) = %d %t, want %d %t", tc.name, tc.prefix, ordinal, ok, tc.ordinal, tc.ok)
		}
	}

	s := workload.Set{Name: "zk", Volume: "data"}
	if s.PodName(2) != "zk-2" || s.ClaimName(2) != "data-zk-2" {
		t.Errorf("names %q %q", s.PodName(2), s.ClaimName(2))
	}
	if o, ok := s.ClaimOrdinal(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-zk-2"}}); !ok || o != 2 {
		t.Errorf("ClaimOrdinal(data-zk-2) = %d, %t", o, ok)
	}
}

func TestReadiness(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(status corev1.ConditionStatus, ago time.Duration) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago)),
		}}}}
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		ready      bool
		unreadyFor time.Duration
		since      bool
	}{
		{"ready", pod(corev1.ConditionTrue, time.Minute), true, 0, true},
		{"unready", pod(corev1.ConditionFalse, 3*time.Minute), false, 3 * time.Minute, false},
		{"no condition yet", &corev1.Pod{}, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workload.IsReady(tt.pod); got != tt.ready {
				t.Errorf("IsReady = %t", got)
			}
			if got := workload.UnreadyFor(tt.pod, now); got != tt.unreadyFor {
				t.Errorf("UnreadyFor = %s, want %s", got, tt.unreadyFor)
			}
			if at, ok := workload.ReadySince(tt.pod); ok != tt.since || ok && !at.Equal(now.Add(-time.Minute)) {
				t.Errorf("ReadySince = %s, %t", at, ok)
			}
		})
	}
}

func TestEnqueueOwnerByLabels(t *testing.T) {
	h := workload.EnqueueOwnerByLabels("zookeeper", "server")
	labels := func(component string) map[string]string {
		return standard.Labels("zookeeper", "zk", component, "zookeeper")
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"a server pod", labels("server"), []string{"ns/zk"}},
		{"another component", labels("client"), nil},
		{"not managed by Steward", map[string]string{standard.LabelName: "zookeeper", standard.LabelInstance: "zk", standard.LabelComponent: "server"}, nil},
		{"another app", standard.Labels("etcd", "zk", "server", ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "zk-0", Namespace: "ns", Labels: tt.labels}}
			h.Create(context.Background(), event.CreateEvent{Object: pod}, q)
			var got []string
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r.String())
				q.Done(r)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClaimsAgainstAPIServer lists, marks and deletes a set's claims on a
// real API server, and evicts a pod through its budget.
func TestClaimsAgainstAPIServer(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server.Config(t), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "workload-")
	set := workload.Set{Namespace: ns, Name: "zk", Volume: "data", Selector: standard.Selector("zookeeper", "zk", "server")}
	for _, name := range []string{"data-zk-0", "data-zk-1", "data-zk-2", "data-other-0"} {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: set.Selector},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := c.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	claims, err := set.Claims(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 3 {
		t.Fatalf("claims %v: want ordinals 0..2 of zk only", claims)
	}
	const label = "test.steward.dev/departed"
	if err := workload.MarkDeparted(ctx, c, claims, label, func(o int) bool { return o >= 1 }); err != nil {
		t.Fatal(err)
	}
	if claims, err = set.Claims(ctx, c); err != nil {
		t.Fatal(err)
	}
	for o, pvc := range claims {
		if got := workload.IsDeparted(pvc, label); got != (o >= 1) {
			t.Errorf("claim %s departed = %t", pvc.Name, got)
		}
	}
	// Member 1 rejoins: its mark goes.
	if err := workload.MarkDeparted(ctx, c, claims, label, func(o int) bool { return o >= 2 }); err != nil {
		t.Fatal(err)
	}
	deleted, err := workload.DeleteClaims(ctx, c, claims, func(o int) bool { return o >= 2 })
	if err != nil || !slices.Equal(deleted, []string{"data-zk-2"}) {
		t.Fatalf("DeleteClaims = %v, %v; want [data-zk-2]", deleted, err)
	}
	// Deleting again finds it gone (or terminating) and says nothing.
	if claims, err = set.Claims(ctx, c); err != nil {
		t.Fatal(err)
	}
	if again, err := workload.DeleteClaims(ctx, c, claims, func(o int) bool { return o >= 2 }); err != nil || len(again) != 0 {
		t.Errorf("second DeleteClaims = %v, %v; want nothing deleted", again, err)
	}
	if claims, err = set.Claims(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, ok := claims[2]; ok || workload.IsDeparted(claims[1], label) {
		t.Errorf("claims after delete %v: want 0 and 1, neither departed", claims)
	}

	// Eviction goes through the budget: with none left, Evict reports false.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "zk-0", Namespace: ns, Labels: set.Selector},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "zk", Image: "zk"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The API server lets pending pods go whatever the budget: run it.
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "zk", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptrTo(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: set.Selector},
		},
	}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// The API server has no disruption controller here: the test writes
	// the budget's status as that controller would.
	allow := func(n int32) {
		t.Helper()
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: n, ExpectedPods: 1}
		if err := c.Status().Update(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	allow(0)
	if evicted, err := workload.Evict(ctx, c, pod); err != nil || evicted {
		t.Errorf("Evict with no disruption allowed = %t, %v; want false, nil", evicted, err)
	}
	allow(1)
	if evicted, err := workload.Evict(ctx, c, pod); err != nil || !evicted {
		t.Errorf("Evict with a disruption allowed = %t, %v; want true, nil", evicted, err)
	}
	// A pod gone counts as evicted.
	if evicted, err := workload.Evict(ctx, c, pod); err != nil || !evicted {
		t.Errorf("Evict of a deleted pod = %t, %v; want true, nil", evicted, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestReplicas(t *testing.T) {
	set := func(n int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1.StatefulSetSpec{Replicas: &n}}
	}
	holding := func(workload string, n int32, phase commonv1.Phase) *commonv1.Operation {
		op := commonv1.NewOperation("scale-in", "t", []string{"release"}, metav1.Now())
		op.Hold(workload, n)
		if phase != commonv1.PhaseRunning {
			op.Finish(phase, metav1.Now())
		}
		return op
	}
	for _, tc := range []struct {
		name string
		want int32
		live *appsv1.StatefulSet
		op   *commonv1.Operation
		size int32
	}{
		{"no set yet", 3, nil, holding("s", 1, commonv1.PhaseRunning), 3},
		{"grows without a flow", 5, set(3), nil, 5},
		{"keeps a larger size without a hold", 1, set(3), nil, 3},
		{"released to the held size", 1, set(3), holding("s", 1, commonv1.PhaseRunning), 1},
		{"a failed flow still holds", 1, set(3), holding("s", 2, commonv1.PhaseFailed), 2},
		{"never below the spec", 4, set(3), holding("s", 2, commonv1.PhaseRunning), 4},
		{"an aborted flow holds nothing", 1, set(3), holding("s", 1, commonv1.PhaseAborted), 3},
		{"another workload's hold", 1, set(3), holding("other", 1, commonv1.PhaseRunning), 3},
	} {
		if got := workload.Replicas(tc.want, tc.live, tc.op); got != tc.size {
			t.Errorf("%s: Replicas = %d, want %d", tc.name, got, tc.size)
		}
	}
}
