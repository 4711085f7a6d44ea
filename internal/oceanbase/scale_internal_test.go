package oceanbase

import (
	"context"
	"database/sql"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

// TestZoneReplicas: Declare sizes a zone's StatefulSet from what the
// operation holds (never below the spec's replicas), and without a hold
// keeps a StatefulSet larger than the spec at its size, whatever flow or
// step runs: only a hold releases departing observers.
func TestZoneReplicas(t *testing.T) {
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Name: "ob"}}
	zone := obv1.OBZoneSpec{Name: "z1", Replicas: 1}
	steps := []string{stepDeleteServers, stepWaitDeleted, stepRemoveObservers}
	scaleIn := func(phase commonv1.Phase, step string, held ...int32) *commonv1.Operation {
		op := commonv1.NewOperation(flowScaleIn, "remove ob-z1-1", steps, metav1.Now())
		op.SetCurrent(int32(slices.Index(steps, step)), metav1.Now())
		for _, h := range held {
			op.Hold("ob-z1", h)
		}
		if phase != commonv1.PhaseRunning {
			op.Finish(phase, metav1.Now())
		}
		return op
	}
	for _, tc := range []struct {
		name string
		set  *int32 // nil: no StatefulSet yet
		op   *commonv1.Operation
		want int32
	}{
		{name: "no StatefulSet yet", want: 1},
		{name: "a StatefulSet at the spec's size", set: ptr.To[int32](1), want: 1},
		{name: "larger than the spec, no flow", set: ptr.To[int32](2), want: 2},
		{name: "larger, while the scale-in deletes the servers", set: ptr.To[int32](2), op: scaleIn(commonv1.PhaseRunning, stepDeleteServers), want: 2},
		{name: "larger, the release step not run yet", set: ptr.To[int32](2), op: scaleIn(commonv1.PhaseRunning, stepRemoveObservers), want: 2},
		{name: "held at the spec's size", set: ptr.To[int32](2), op: scaleIn(commonv1.PhaseRunning, stepRemoveObservers, 1), want: 1},
		{name: "held by a failed scale-in", set: ptr.To[int32](2), op: scaleIn(commonv1.PhaseFailed, stepRemoveObservers, 1), want: 1},
		{name: "held by an aborted scale-in: nothing", set: ptr.To[int32](2), op: scaleIn(commonv1.PhaseAborted, stepRemoveObservers, 1), want: 2},
		{name: "held below a spec grown since", set: ptr.To[int32](1), op: scaleIn(commonv1.PhaseRunning, stepRemoveObservers, 0), want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &cluster{sets: map[string]*appsv1.StatefulSet{}}
			if tc.set != nil {
				cl.sets["z1"] = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: build.StatefulSetName(ob, "z1")}, Spec: appsv1.StatefulSetSpec{Replicas: tc.set}}
			}
			if got := cl.replicas(zone, tc.op); got != tc.want {
				t.Errorf("replicas = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRemoveObservers: the scale-in's last step holds the StatefulSet of a
// zone that has more observers than its replicas at the replicas, and
// deletes a departed observer's volume claim only once the StatefulSet no
// longer asks for its pod (a claim deleted before would come back empty
// under a pod the StatefulSet creates again); it is done once the cache
// shows the StatefulSet at that size and the pods gone.
func TestRemoveObservers(t *testing.T) {
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ob"}, Spec: obv1.OBClusterSpec{
		Zones: []obv1.OBZoneSpec{{Name: "z1", Replicas: 1}, {Name: "z2", Replicas: 1}}}}
	ob.Status.Operation = commonv1.NewOperation(flowScaleIn, "remove ob-z1-1", []string{stepDeleteServers, stepWaitDeleted, stepRemoveObservers},
		metav1.Now())
	claim := func(zone string, o int) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: zoneSet(ob, zone).ClaimName(o),
			Labels: build.Selector(ob, build.ComponentObserver)}}
	}
	s := newTestScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(claim("z1", 0), claim("z1", 1), claim("z2", 0)).Build()
	ctx := &Context{Context: context.Background(), Obj: ob, Client: c, Log: logr.Discard()}
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	set := func(n int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(n)}}
	}
	claimed := func(o int) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: zoneSet(ob, "z1").ClaimName(o)}, &corev1.PersistentVolumeClaim{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	db := &sql.DB{} // OceanBase answered (the step sends nothing)
	run := func(what string, cl *cluster, wantDone bool) {
		t.Helper()
		done, err := (&Controller{}).removeObservers(ctx, cl)
		if err != nil || done != wantDone {
			t.Fatalf("%s: done %t, %v; want %t", what, done, err, wantDone)
		}
	}

	// The departing pod is gone (deleted by hand, say) while the
	// StatefulSet still has two: it would come back, so its claim stays.
	run("the StatefulSet still at two", &cluster{db: db, sets: map[string]*appsv1.StatefulSet{"z1": set(2), "z2": set(1)},
		pods: map[string]map[int]*corev1.Pod{"z1": {0: pod("ob-z1-0")}, "z2": {0: pod("ob-z2-0")}}}, false)
	if held, ok := ob.Status.Operation.HeldReplicas("ob-z1"); !ok || held != 1 {
		t.Errorf("the step holds ob-z1 at %d, %t; want 1", held, ok)
	}
	if _, ok := ob.Status.Operation.HeldReplicas("ob-z2"); ok {
		t.Errorf("the step holds ob-z2, which has no observer to release: %v", ob.Status.Operation.Held)
	}
	if !claimed(1) {
		t.Fatal("the claim of ob-z1-1 was deleted while its StatefulSet still asks for the pod")
	}

	run("the StatefulSet at one, its pod terminating", &cluster{db: db, sets: map[string]*appsv1.StatefulSet{"z1": set(1), "z2": set(1)},
		pods: map[string]map[int]*corev1.Pod{"z1": {0: pod("ob-z1-0"), 1: pod("ob-z1-1")}, "z2": {0: pod("ob-z2-0")}}}, false)
	if !claimed(1) {
		t.Fatal("the claim of ob-z1-1 was deleted under its pod")
	}
	run("the pod gone", &cluster{db: db, sets: map[string]*appsv1.StatefulSet{"z1": set(1), "z2": set(1)},
		pods: map[string]map[int]*corev1.Pod{"z1": {0: pod("ob-z1-0")}, "z2": {0: pod("ob-z2-0")}}}, true)
	if claimed(1) || !claimed(0) {
		t.Errorf("claims of ob-z1: 0 kept %t, 1 kept %t; want only 0's", claimed(0), claimed(1))
	}
	if held, ok := ob.Status.Operation.HeldReplicas("ob-z1"); !ok || held != 1 {
		t.Errorf("the step holds ob-z1 at %d, %t; want 1 until the flow ends", held, ok)
	}

	// z2's replicas lowered to 0 while the step runs: OceanBase still
	// lists ob-z2-0's server, which no step deleted, so the set stays at
	// one and its claim stays; the step is done with what it released,
	// and the next scale-in deletes the server first.
	ob.Spec.Zones[1].Replicas = 0
	listed := &cluster{db: db, sets: map[string]*appsv1.StatefulSet{"z1": set(1), "z2": set(1)},
		pods:    map[string]map[int]*corev1.Pod{"z1": {0: pod("ob-z1-0")}, "z2": {0: pod("ob-z2-0")}},
		ips:     map[string]string{"ob-z2-0": "10.0.0.2"},
		servers: map[string]obsql.Server{"10.0.0.2:2882": {Zone: "z2", Status: "ACTIVE"}}}
	run("z2 lowered to 0, its server still listed", listed, true)
	if held, ok := ob.Status.Operation.HeldReplicas("ob-z2"); ok && held != 1 {
		t.Errorf("the step holds ob-z2 at %d; want it kept at 1 while OceanBase lists ob-z2-0's server", held)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: zoneSet(ob, "z2").ClaimName(0)}, &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("the claim of ob-z2-0, whose server OceanBase lists: %v", err)
	}
	if _, err := (&Controller{}).removeObservers(ctx, &cluster{}); err == nil {
		t.Error("the step ran without OceanBase's answer; it must not release what it cannot check")
	}
}

// TestStepNames: every flow's steps are named in kebab-case, as the other
// systems' are, and each keeps the name the release before persisted in
// status.operation (Step.Was), so that an operation it left resumes at the
// same step.
func TestStepNames(t *testing.T) {
	c, tc := &Controller{}, &TenantController{}
	was := map[string]string{} // "flow/earlier name": "flow/step"
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	for _, names := range []map[string][]string{
		stepsOf(c.bootstrapFlow()), stepsOf(c.scaleInFlow()), stepsOf(c.upgradeFlow()), stepsOf(c.addZoneFlow()),
		stepsOf(c.removeZoneFlow()), stepsOf(c.recoverFlow()), stepsOf(tc.createFlow()), stepsOf(tc.zonesFlow()),
	} {
		for step, earlier := range names {
			flow, name, _ := strings.Cut(step, "/")
			if !kebab.MatchString(name) {
				t.Errorf("step %s is not kebab-case", step)
			}
			for _, e := range earlier {
				was[flow+"/"+e] = step
			}
		}
	}
	// The names the release before persisted, each flow's in order.
	for _, old := range []string{
		"bootstrap/Bootstrap", "bootstrap/CreateUsers", "bootstrap/AddServers", "bootstrap/SetParameters",
		"scale-in/DeleteServers", "scale-in/WaitServersDeleted", "scale-in/Shrink",
		"upgrade/UpgradeZones",
		"add-zone/AddZones", "add-zone/AddZoneServers", "add-zone/ExtendSysTenant",
		"remove-zone/WaitTenantsLeave", "remove-zone/ShrinkSysTenant", "remove-zone/StopZones",
		"remove-zone/DeleteZoneServers", "remove-zone/DeleteZones", "remove-zone/RemoveZoneSets",
		"recover/RecordLostServers", "recover/Readdress", "recover/AddReplacements",
		"recover/WaitReplacementsServing", "recover/DeleteLostServers", "recover/WaitLostServersDeleted",
		"create/CreateUnitConfig", "create/CreatePools", "create/CreateTenant", "create/SetRootPassword",
		"zones/ChangeZones",
	} {
		if was[old] == "" {
			t.Errorf("no step resumes an operation persisted at %s", old)
		}
	}
	if got := was["scale-in/Shrink"]; got != "scale-in/"+stepRemoveObservers {
		t.Errorf("an operation persisted at scale-in/Shrink resumes at %q, want the step that releases the observers", got)
	}
}

// stepsOf returns f's steps as "flow/step" with their earlier names.
func stepsOf[T framework.Object, S any](f framework.Flow[T, S]) map[string][]string {
	out := map[string][]string{}
	for _, s := range f.Steps {
		out[f.Name+"/"+s.Name] = s.Was
	}
	return out
}

func newTestScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := obv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
