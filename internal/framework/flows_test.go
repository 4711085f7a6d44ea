package framework

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// stepOutcome is what a scripted step reports on one run.
type stepOutcome struct {
	done bool
	err  error
}

// flowPass returns a pass over a Widget running a one-step flow whose step
// reports the outcomes in turn, on a fake API server.
func flowPass(t *testing.T, step Step[*testapi.Widget, Nothing], maxAttempts int32) (*pass[*testapi.Widget, Nothing], *commonv1.Operation) {
	t.Helper()
	s := k8sruntime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(w).WithStatusSubresource(w).Build()
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	f := Flow[*testapi.Widget, Nothing]{Name: "f", Steps: []Step[*testapi.Widget, Nothing]{step}, MaxAttempts: maxAttempts}.withDefaults()
	r := &Reconciler[*testapi.Widget, Nothing]{
		core: &core{
			client:   cl,
			reader:   cl,
			scheme:   s,
			recorder: events.NewFakeRecorder(100),
			kind:     "Widget",
		},
		opts:  Options[*testapi.Widget, Nothing]{ActionRequeue: time.Millisecond},
		flows: map[string]*Flow[*testapi.Widget, Nothing]{"f": &f},
	}
	p := &pass[*testapi.Widget, Nothing]{r: r, log: logr.Discard(), obj: w}
	p.begin(t.Context())
	op := commonv1.NewOperation("f", "t", []string{step.Name}, metav1.Now())
	w.Status.Operation = op
	return p, op
}

// scripted returns a step reporting outcomes in turn.
func scripted(outcomes []stepOutcome) Step[*testapi.Widget, Nothing] {
	i := 0
	return Step[*testapi.Widget, Nothing]{Name: "s", Run: func(*Context[*testapi.Widget], Nothing) (bool, error) {
		o := outcomes[i]
		i++
		return o.done, o.err
	}}
}

// runAgain runs the operation's step as the next pass would, once its
// backoff has passed: a retry that was due is due now.
func runAgain(t *testing.T, p *pass[*testapi.Widget, Nothing], op *commonv1.Operation) {
	t.Helper()
	if op.NextAttemptAt != nil {
		due := metav1.Now()
		op.NextAttemptAt = &due
	}
	if _, err := p.runStep(op); err != nil {
		t.Fatalf("runStep: %v", err)
	}
}

// TestStepAttemptsSurvivePolls checks that a step whose runs alternate
// between a poll and a failure, as one that sends again a statement the
// application refuses each time, counts every failure and fails the flow
// after MaxAttempts: the polls between them do not reset its attempts.
func TestStepAttemptsSurvivePolls(t *testing.T) {
	refused, sent := stepOutcome{err: errors.New("refused")}, stepOutcome{}
	p, op := flowPass(t, scripted([]stepOutcome{sent, refused, sent, refused, sent, refused}), 3)
	for i, attempts := range []int32{0, 1, 1, 2, 2} {
		runAgain(t, p, op)
		if op.Phase != commonv1.PhaseRunning || op.Attempts != attempts {
			t.Fatalf("after run %d: phase %s attempts %d, want Running with %d", i+1, op.Phase, op.Attempts, attempts)
		}
	}
	runAgain(t, p, op)
	if op.Phase != commonv1.PhaseFailed || op.Attempts != 3 || op.LastError != "refused" {
		t.Fatalf("after the third refusal: %+v, want Failed after 3 attempts", op)
	}
}

// TestStepAttemptsResetAfterRecovery checks that a step that has run
// without error for the flow's longest backoff since its last failure has
// its failed attempts forgotten, so that MaxAttempts bounds one streak of
// failures, not every transient error of a long step.
func TestStepAttemptsResetAfterRecovery(t *testing.T) {
	boom := errors.New("boom")
	fail, poll := stepOutcome{err: boom}, stepOutcome{}
	p, op := flowPass(t, scripted([]stepOutcome{fail, fail, poll, poll, fail, fail, {done: true}}), 3)
	for i, attempts := range []int32{1, 2, 2} {
		runAgain(t, p, op)
		if op.Attempts != attempts {
			t.Fatalf("after run %d: attempts %d, want %d", i+1, op.Attempts, attempts)
		}
	}
	// The step has polled without error since its retry came due, longer
	// ago than the longest backoff.
	long := metav1.NewTime(time.Now().Add(-DefaultStepBackoff.Max - time.Second))
	op.NextAttemptAt = &long
	if _, err := p.runStep(op); err != nil {
		t.Fatal(err)
	}
	if op.Attempts != 0 || op.LastError != "" || op.NextAttemptAt != nil {
		t.Fatalf("after a recovery: %+v, want the failures forgotten", op)
	}
	for i, attempts := range []int32{1, 2} {
		runAgain(t, p, op)
		if op.Phase != commonv1.PhaseRunning || op.Attempts != attempts {
			t.Fatalf("after failure %d of the next streak: phase %s attempts %d, want Running with %d", i+1, op.Phase, op.Attempts, attempts)
		}
	}
	runAgain(t, p, op)
	if op.Phase != commonv1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded", op.Phase)
	}
}

// TestStepTimeout checks that a step that is not done within its timeout
// counts failed attempts until the flow fails, and that it does not before.
func TestStepTimeout(t *testing.T) {
	polls := make([]stepOutcome, 10)
	step := scripted(polls)
	step.Timeout = time.Hour
	p, op := flowPass(t, step, 3)
	runAgain(t, p, op)
	if op.Attempts != 0 || op.Phase != commonv1.PhaseRunning {
		t.Fatalf("within the timeout: %+v, want no failed attempt", op)
	}

	past := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	op.StepStartedAt = &past
	for want := int32(1); want <= 2; want++ {
		runAgain(t, p, op)
		if op.Attempts != want || !strings.Contains(op.LastError, "timeout of 1h0m0s") {
			t.Fatalf("past the timeout: %+v, want %d failed attempts", op, want)
		}
	}
	runAgain(t, p, op)
	if op.Phase != commonv1.PhaseFailed {
		t.Fatalf("phase %s after MaxAttempts timeouts, want Failed", op.Phase)
	}
	if err := applyRescue(op, commonv1.RescueRetry, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	runAgain(t, p, op)
	if op.Phase != commonv1.PhaseRunning || op.Attempts != 0 {
		t.Errorf("after a retry: %+v, want a fresh timeout", op)
	}
}

// TestStepSkippedOnStaleCache checks that a step does not run when the
// cache's copy of the object is older than the API server's.
func TestStepSkippedOnStaleCache(t *testing.T) {
	ran := false
	p, op := flowPass(t, Step[*testapi.Widget, Nothing]{Name: "s", Run: func(*Context[*testapi.Widget], Nothing) (bool, error) {
		ran = true
		return true, nil
	}}, 3)
	p.obj.SetResourceVersion("1") // as an older cache would have it
	_, err := p.runStep(op)
	if classify(err) != classConflict || ran {
		t.Fatalf("runStep on a stale cache: ran %v, error %v; want a quiet requeue without running", ran, err)
	}
}

// TestResyncNotReady checks that an in-sync object that is not Ready is
// observed again after ResyncNotReady, and with ResyncNotReadyMax, one
// that has not been Ready for longer after as long (up to
// ResyncNotReadyMax, which may exceed Resync); a Ready one after Resync.
func TestResyncNotReady(t *testing.T) {
	r := &Reconciler[*testapi.Widget, Nothing]{opts: Options[*testapi.Widget, Nothing]{Resync: time.Minute, ResyncNotReady: 2 * time.Second}}
	w := &testapi.Widget{}
	if got := r.resyncAfter(w); got != 2*time.Second {
		t.Errorf("no Ready condition: resync after %s, want 2s", got)
	}
	SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionFalse, "Waiting", "", 0)
	notReadyFor := func(d time.Duration) {
		meta.FindStatusCondition(w.Status.Conditions, ConditionReady).LastTransitionTime = metav1.NewTime(time.Now().Add(-d))
	}
	notReadyFor(time.Hour)
	if got := r.resyncAfter(w); got != 2*time.Second {
		t.Errorf("not Ready for an hour, no ResyncNotReadyMax: resync after %s, want 2s", got)
	}

	// backsOff checks the resync after each {not Ready for, want}.
	backsOff := func(what string, cases ...[2]time.Duration) {
		t.Helper()
		for _, c := range cases {
			notReadyFor(c[0])
			if got := r.resyncAfter(w); got < c[1] || got > c[1]+time.Second {
				t.Errorf("not Ready for %s, %s: resync after %s, want %s", c[0], what, got, c[1])
			}
		}
	}
	r.opts.ResyncNotReadyMax = 30 * time.Second
	backsOff("ResyncNotReadyMax 30s", [2]time.Duration{0, 2 * time.Second},
		[2]time.Duration{10 * time.Second, 10 * time.Second}, [2]time.Duration{time.Hour, 30 * time.Second})
	SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionTrue, ReasonReconciled, "", 0)
	if got := r.resyncAfter(w); got != time.Minute {
		t.Errorf("Ready: resync after %s, want Resync, 1m", got)
	}
	r.opts.ResyncNotReady = 2 * time.Minute // longer than Resync: Resync
	SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionFalse, "Waiting", "", 0)
	if got := r.resyncAfter(w); got != time.Minute {
		t.Errorf("not Ready, ResyncNotReady > Resync: resync after %s, want 1m", got)
	}

	// ResyncNotReadyMax past Resync, without ResyncNotReady: from Resync
	// up to it.
	r.opts.ResyncNotReady, r.opts.ResyncNotReadyMax = 0, 5*time.Minute
	backsOff("Resync 1m, ResyncNotReadyMax 5m", [2]time.Duration{0, time.Minute},
		[2]time.Duration{3 * time.Minute, 3 * time.Minute}, [2]time.Duration{time.Hour, 5 * time.Minute})
	SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionTrue, ReasonReconciled, "", 0)
	if got := r.resyncAfter(w); got != time.Minute {
		t.Errorf("Ready, ResyncNotReadyMax 5m: resync after %s, want Resync, 1m", got)
	}
	r.opts.Resync = 0 // watches alone
	SetCondition(&w.Status.Conditions, ConditionReady, metav1.ConditionFalse, "Waiting", "", 0)
	if got := r.resyncAfter(w); got != 0 {
		t.Errorf("no Resync nor ResyncNotReady: resync after %s, want none", got)
	}
}

// TestStepRenamed checks that an operation persisted under a step's earlier
// name (Step.Was) resumes at that step and shows the current name.
func TestStepRenamed(t *testing.T) {
	ran := false
	step := Step[*testapi.Widget, Nothing]{Name: "release-pods", Was: []string{"Shrink"},
		Run: func(*Context[*testapi.Widget], Nothing) (bool, error) { ran = true; return false, nil }}
	p, _ := flowPass(t, step, 0)
	op := commonv1.NewOperation("f", "t", []string{"Shrink"}, metav1.Now())
	op.Skipped = []string{"Shrink", "gone"}
	p.obj.Status.Operation = op
	if _, _, err := p.runOperation(); err != nil {
		t.Fatalf("runOperation: %v", err)
	}
	if !ran || op.Phase != commonv1.PhaseRunning {
		t.Errorf("step ran %t, phase %s; want it run under its earlier name, Running", ran, op.Phase)
	}
	if op.Step != "release-pods" || op.Steps[0] != "release-pods" || op.Skipped[0] != "release-pods" || op.Skipped[1] != "gone" {
		t.Errorf("operation names step %q, steps %v, skipped %v; want release-pods throughout, unknown names kept",
			op.Step, op.Steps, op.Skipped)
	}
}

// TestFlowValidateEarlierNames checks that an earlier step name may not
// repeat a step's name.
func TestFlowValidateEarlierNames(t *testing.T) {
	run := func(*Context[*testapi.Widget], Nothing) (bool, error) { return true, nil }
	f := Flow[*testapi.Widget, Nothing]{Name: "f", Steps: []Step[*testapi.Widget, Nothing]{
		{Name: "a", Run: run}, {Name: "b", Was: []string{"a"}, Run: run}}}
	if err := f.validate(); err == nil || !strings.Contains(err.Error(), `earlier name "a"`) {
		t.Errorf("validate() = %v; want the earlier name refused", err)
	}
}
