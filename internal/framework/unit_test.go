package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

func TestSetCondition(t *testing.T) {
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	base := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReconciled,
		ObservedGeneration: 1, LastTransitionTime: old}}
	tests := []struct {
		name           string
		status         metav1.ConditionStatus
		reason, msg    string
		gen            int64
		wantChanged    bool
		wantTransition bool
	}{
		{"unchanged", metav1.ConditionTrue, ReasonReconciled, "", 1, false, false},
		{"new generation", metav1.ConditionTrue, ReasonReconciled, "", 2, true, false},
		{"new message", metav1.ConditionTrue, ReasonReconciled, "hello", 1, true, false},
		{"status flips", metav1.ConditionFalse, ReasonInvalidSpec, "bad", 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := slices.Clone(base)
			changed := SetCondition(&conds, ConditionReady, tt.status, tt.reason, tt.msg, tt.gen)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			moved := !conds[0].LastTransitionTime.Equal(&old)
			if moved != tt.wantTransition {
				t.Errorf("LastTransitionTime moved = %v, want %v", moved, tt.wantTransition)
			}
			if got := len(Transitions(base, conds)); got != map[bool]int{false: 0, true: 1}[tt.wantTransition] {
				t.Errorf("%d transitions", got)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "h"},  // é is 2 bytes: never cut in half
		{"héllo", 3, "hé"}, // the whole é fits
		{"日本語", 5, "日"},    // 3-byte characters
		{"日本語", 2, ""},
		{"", 0, ""},
	} {
		got := Shorten(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) || len(got) > tt.n {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	conds := []metav1.Condition{}
	SetCondition(&conds, ConditionReady, metav1.ConditionFalse, ReasonInvalidSpec, strings.Repeat("é", MaxConditionMessage), 1)
	if m := conds[0].Message; len(m) > MaxConditionMessage || !utf8.ValidString(m) {
		t.Errorf("a long message is kept at %d bytes (valid UTF-8: %v), want at most %d", len(m), utf8.ValidString(m), MaxConditionMessage)
	}
}

func TestTransitionsAndEvents(t *testing.T) {
	before := []metav1.Condition{
		{Type: ConditionReady, Status: metav1.ConditionFalse},
		{Type: ConditionSynced, Status: metav1.ConditionTrue},
	}
	after := []metav1.Condition{
		{Type: ConditionReady, Status: metav1.ConditionTrue},
		{Type: ConditionSynced, Status: metav1.ConditionTrue},
		{Type: ConditionPaused, Status: metav1.ConditionFalse},
		{Type: ConditionDependenciesReady, Status: metav1.ConditionFalse},
	}
	var got []string
	for _, tr := range Transitions(before, after) {
		got = append(got, fmt.Sprintf("%s=%s/%v", tr.New.Type, tr.New.Status, eventWorthy(tr)))
	}
	want := []string{"Ready=True/true", "Paused=False/false", "DependenciesReady=False/true"}
	if !slices.Equal(got, want) {
		t.Errorf("transitions = %v, want %v", got, want)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 10 * time.Second}
	steps := []struct {
		n    int32
		want time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {60, 10 * time.Second}}
	for _, s := range steps {
		if got := b.Step(s.n); got != s.want {
			t.Errorf("Step(%d) = %s, want %s", s.n, got, s.want)
		}
	}
	since := []struct{ elapsed, want time.Duration }{
		{0, time.Second}, {3 * time.Second, 3 * time.Second}, {time.Hour, 10 * time.Second},
	}
	for _, s := range since {
		if got := b.Since(s.elapsed); got != s.want {
			t.Errorf("Since(%s) = %s, want %s", s.elapsed, got, s.want)
		}
	}
	if got := (Backoff{}).withDefaults(DefaultWaitBackoff); got != DefaultWaitBackoff {
		t.Errorf("defaults = %+v", got)
	}
}

func TestReferencedConfigMaps(t *testing.T) {
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	spec := &corev1.PodSpec{
		Volumes: []corev1.Volume{
			{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("vol")}}},
			{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("projected")}}, {},
			}}}},
			{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("envfrom")}}}}},
		Containers: []corev1.Container{{Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("env"), Key: "k"}}},
			{Name: "B", Value: "plain"},
			{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("vol"), Key: "k"}}},
		}}},
	}
	want := []string{"env", "envfrom", "projected", "vol"}
	if got := ReferencedConfigMaps(spec); !slices.Equal(got, want) {
		t.Errorf("ReferencedConfigMaps = %v, want %v", got, want)
	}
}

func TestPodSpecsOfReferencingKinds(t *testing.T) {
	tmpl := func(cm string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
		}}}}}
	}
	revision := func(raw string) appsv1.ControllerRevision {
		return appsv1.ControllerRevision{Data: k8sruntime.RawExtension{Raw: []byte(raw)}}
	}
	stsRevision, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl("revision"), "$patch": "replace"}})
	if err != nil {
		t.Fatal(err)
	}
	lists := []client.ObjectList{
		&corev1.PodList{Items: []corev1.Pod{{Spec: tmpl("pod").Spec}}},
		&appsv1.StatefulSetList{Items: []appsv1.StatefulSet{{Spec: appsv1.StatefulSetSpec{Template: tmpl("sts")}}}},
		&appsv1.DeploymentList{Items: []appsv1.Deployment{{Spec: appsv1.DeploymentSpec{Template: tmpl("deploy")}}}},
		&appsv1.DaemonSetList{Items: []appsv1.DaemonSet{{Spec: appsv1.DaemonSetSpec{Template: tmpl("ds")}}}},
		&appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{{Spec: appsv1.ReplicaSetSpec{Template: tmpl("rs")}}}},
		&batchv1.JobList{Items: []batchv1.Job{{Spec: batchv1.JobSpec{Template: tmpl("job")}}}},
		&batchv1.CronJobList{Items: []batchv1.CronJob{{Spec: batchv1.CronJobSpec{
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl("cronjob")}}}}}},
		&appsv1.ControllerRevisionList{Items: []appsv1.ControllerRevision{
			revision(string(stsRevision)), revision(`{"replicas":3}`), revision(`not json`), {},
		}},
	}
	var got []string
	for _, l := range lists {
		for _, spec := range podSpecs(l) {
			got = append(got, ReferencedConfigMaps(spec)...)
		}
	}
	want := []string{"pod", "sts", "deploy", "ds", "rs", "job", "cronjob", "revision"}
	if !slices.Equal(got, want) {
		t.Errorf("referenced = %v, want %v", got, want)
	}
}

func TestSortNewestFirst(t *testing.T) {
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Unix(int64(sec), 0)) }
	cm := func(name, rev string, created metav1.Time) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if rev != "" {
			c.Annotations = map[string]string{ConfigRevisionAnnotation: rev}
		}
		return c
	}
	cms := []*corev1.ConfigMap{cm("a", "2", at(5)), cm("b", "3", at(5)), cm("c", "", at(9)), cm("d", "", at(7)), cm("e", "10", at(1))}
	sortNewestFirst(cms)
	var got []string
	for _, c := range cms {
		got = append(got, c.Name)
	}
	if want := []string{"e", "b", "a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestStatusPatch(t *testing.T) {
	base := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", ResourceVersion: "7", Generation: 2}}
	base.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReconciled}}
	tests := []struct {
		name   string
		mutate func(w *testapi.Widget)
		want   string
	}{
		{"nothing", func(*testapi.Widget) {}, ""},
		{"spec defaults only", func(w *testapi.Widget) { w.Spec.Replicas = 3 }, ""},
		{"unchanged condition set again", func(w *testapi.Widget) {
			SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionTrue, ReasonReconciled, "", 0)
		}, ""},
		{"observed generation", func(w *testapi.Widget) { w.Status.ObservedGeneration = 2 },
			`{"metadata":{"resourceVersion":"7"},"status":{"observedGeneration":2}}`},
		{"an int64 beyond float64's exact integers (an OceanBase SCN)", func(w *testapi.Widget) { w.Status.ObservedGeneration = 1795874724917275341 },
			`{"metadata":{"resourceVersion":"7"},"status":{"observedGeneration":1795874724917275341}}`},
		{"operation", func(w *testapi.Widget) {
			w.Spec.Replicas = 3
			w.Status.Operation = &commonv1.Operation{Name: "x", Phase: commonv1.PhaseRunning}
		}, `"status":{"operation":{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := base.DeepCopy()
			tt.mutate(after)
			data, err := statusPatch(base, after)
			if err != nil {
				t.Fatal(err)
			}
			got := string(data)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("patch = %s, want %s", got, tt.want)
			}
			if strings.Contains(got, "spec") {
				t.Errorf("patch %s touches spec", got)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "test", Resource: "widgets"}
	tests := []struct {
		err  error
		want errorClass
	}{
		{nil, classNone},
		{apierrors.NewConflict(gr, "w", errors.New("stale")), classConflict},
		{fmt.Errorf("apply: %w", apierrors.NewConflict(gr, "w", errors.New("stale"))), classConflict},
		{apierrors.NewAlreadyExists(gr, "w"), classTransient},
		{fmt.Errorf("create: %w", apierrors.NewAlreadyExists(gr, "w")), classTransient},
		{fmt.Errorf("step: %w", errStaleCache), classConflict},
		{InvalidSpec(errors.New("bad")), classInvalidSpec},
		{fmt.Errorf("wrapped: %w", InvalidSpec(errors.New("bad"))), classInvalidSpec},
		{Terminal(errors.New("gone")), classTerminal},
		{reconcile.TerminalError(errors.New("gone")), classTerminal},
		{errors.New("timeout"), classTransient},
		{apierrors.NewNotFound(gr, "w"), classTransient},
	}
	for _, tt := range tests {
		if got := classify(tt.err); got != tt.want {
			t.Errorf("classify(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
	if InvalidSpec(nil) != nil || Terminal(nil) != nil {
		t.Error("marking a nil error must return nil")
	}
	if !IsTerminal(InvalidSpec(errors.New("x"))) {
		t.Error("an invalid spec must be terminal")
	}
}

type namer struct{}

func (namer) scaleOut(*Context[*testapi.Widget]) error { return nil }

func rollingRestart(*Context[*testapi.Widget]) error { return nil }

func TestActionName(t *testing.T) {
	closure := func(*Context[*testapi.Widget]) error { return nil }
	tests := []struct {
		fn   Action[*testapi.Widget]
		want string
	}{
		{namer{}.scaleOut, "ScaleOut"},
		{rollingRestart, "RollingRestart"},
		{closure, "Action"},
	}
	for _, tt := range tests {
		if got := actionName(tt.fn); got != tt.want {
			t.Errorf("actionName = %q, want %q", got, tt.want)
		}
	}
	reasons := map[string]string{"scale-out": "ScaleOut", "upgrade_v2": "UpgradeV2", "2fast": "Fast", "--": "Unknown", "Ready": "Ready"}
	for in, want := range reasons {
		if got := reasonFrom(in); got != want {
			t.Errorf("reasonFrom(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApplyRescue(t *testing.T) {
	now := metav1.Now()
	failedAt := func(i int32) *commonv1.Operation {
		op := commonv1.NewOperation("upgrade", "g2", []string{"a", "b", "c"}, now)
		op.SetCurrent(i, now)
		op.Attempts, op.LastError = 5, "boom"
		op.Finish(commonv1.PhaseFailed, now)
		return op
	}
	tests := []struct {
		name      string
		op        *commonv1.Operation
		verb      commonv1.Rescue
		phase     commonv1.Phase
		current   int32
		skipped   []string
		wantError bool
	}{
		{"retry", failedAt(1), commonv1.RescueRetry, commonv1.PhaseRunning, 1, nil, false},
		{"skip", failedAt(1), commonv1.RescueSkip, commonv1.PhaseRunning, 2, []string{"b"}, false},
		{"skip last", failedAt(2), commonv1.RescueSkip, commonv1.PhaseSucceeded, 3, []string{"c"}, false},
		{"abort", failedAt(1), commonv1.RescueAbort, commonv1.PhaseAborted, 1, nil, false},
		{"unknown", failedAt(1), commonv1.Rescue("dance"), commonv1.PhaseFailed, 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := applyRescue(tt.op, tt.verb, now)
			if (err != nil) != tt.wantError {
				t.Fatalf("error = %v, want error %v", err, tt.wantError)
			}
			if tt.op.Phase != tt.phase || tt.op.Current != tt.current || !slices.Equal(tt.op.Skipped, tt.skipped) {
				t.Errorf("operation = %+v, want phase %s current %d skipped %v", tt.op, tt.phase, tt.current, tt.skipped)
			}
			if tt.phase == commonv1.PhaseRunning && (tt.op.Attempts != 0 || tt.op.LastError != "" || tt.op.FinishedAt != nil) {
				t.Errorf("a rescued running operation keeps its failure: %+v", tt.op)
			}
		})
	}
}

func TestIsReady(t *testing.T) {
	ready := func(status metav1.ConditionStatus, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: ConditionReady, Status: status, Reason: "Booting", ObservedGeneration: gen}}
	}
	gadget := func(gen, observed int64, conds []metav1.Condition) *testapi.Gadget {
		g := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		g.Status.ObservedGeneration, g.Status.Conditions = observed, conds
		return g
	}
	tests := []struct {
		name    string
		obj     client.Object
		ready   bool
		wantWhy string
	}{
		{"unobserved", gadget(2, 1, ready(metav1.ConditionTrue, 2)), false, "not observed yet (generation 2, observed 1)"},
		{"no condition", gadget(2, 2, nil), false, "not ready"},
		{"not ready", gadget(2, 2, ready(metav1.ConditionFalse, 2)), false, "not ready (Booting)"},
		{"ready for an older generation", gadget(2, 2, ready(metav1.ConditionTrue, 1)), false, "not ready at generation 2 (Ready is for generation 1)"},
		{"ready, status stale", gadget(3, 2, ready(metav1.ConditionTrue, 3)), false, "not observed yet (generation 3, observed 2)"},
		{"ready", gadget(2, 2, ready(metav1.ConditionTrue, 2)), true, ""},
		{"plain object", &corev1.Secret{}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := IsReady(tt.obj)
			if ok != tt.ready || !strings.Contains(why, tt.wantWhy) || (tt.ready && why != "") {
				t.Errorf("IsReady = %v %q, want %v %q", ok, why, tt.ready, tt.wantWhy)
			}
		})
	}
}

// TestWarningChanges: a condition whose reason turns to a warning reason,
// its status unchanged, is reported for an Event; other reason changes are
// not (they would make every routine step an Event).
func TestWarningChanges(t *testing.T) {
	before := []metav1.Condition{
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: commonv1.ReasonScaling},
		{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: commonv1.ReasonScaling},
		{Type: ConditionSynced, Status: metav1.ConditionFalse, Reason: ReasonReconcileError},
	}
	after := []metav1.Condition{
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: commonv1.ReasonQuorumAtRisk},
		{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: commonv1.ReasonRestarting},
		{Type: ConditionSynced, Status: metav1.ConditionFalse, Reason: ReasonReconcileError},
	}
	var got []string
	for _, tr := range WarningChanges(before, after) {
		got = append(got, tr.New.Type+"="+tr.New.Reason)
	}
	if want := []string{"Progressing=QuorumAtRisk"}; !slices.Equal(got, want) {
		t.Errorf("warning changes = %v, want %v", got, want)
	}
}

func TestNamesMayClash(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"a", "a-observers", true}, {"a-observers", "a", true}, {"a-b", "a-b-0", true},
		{"a", "b", false}, {"ab", "ba", false}, {"mo-1", "mo-2", false},
	} {
		if got := NamesMayClash(tt.a, tt.b); got != tt.want {
			t.Errorf("NamesMayClash(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
