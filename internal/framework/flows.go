package framework

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/metrics"
)

// Defaults of a Flow.
const (
	DefaultMaxAttempts = 5
	DefaultPoll        = 2 * time.Second
)

// DefaultStepBackoff is the default backoff between failed attempts of a
// step.
var DefaultStepBackoff = Backoff{Initial: time.Second, Max: 5 * time.Minute}

// Flow is a named sequence of steps whose progress is persisted in
// status.operation. Register flows in Options.Flows and start one with
// StartFlow; the framework then runs the current step on every pass until
// the flow succeeds, fails or is aborted, and calls Observe again only
// afterwards. Its steps receive what the actor's Declare observed, an S
// (see Actor).
type Flow[T Object, S any] struct {
	// Name identifies the flow in status; keep it stable across releases.
	Name string
	// Steps run in order. Step names are persisted too.
	Steps []Step[T, S]
	// MaxAttempts bounds the failed attempts of one step before the flow
	// fails (default DefaultMaxAttempts). Runs that are not done do not
	// reset the count: it starts again only once the step has run without
	// error for Backoff.Max after its last failure (or completed, or was
	// rescued).
	MaxAttempts int32
	// Backoff spaces a step's failed attempts (default DefaultStepBackoff).
	Backoff Backoff
	// Poll is how soon a step that is not done yet runs again (default
	// DefaultPoll).
	Poll time.Duration
}

// Step is one step of a Flow. Run must be idempotent and must not block: it
// starts work (a Job, an asynchronous application call) and polls it,
// reporting done once it completed. It may run again after it reported done
// if the manager stops before the progress is written, so it checks whether
// its work is already done. A terminal error (Terminal, InvalidSpec) fails
// the flow at once; other errors are retried with backoff.
type Step[T Object, S any] struct {
	// Name identifies the step in status: kebab-case, saying what the step
	// does. Operations persist it; to rename a step, list its old names in
	// Was.
	Name string
	// Was lists names the step had in earlier releases: an operation that
	// a manager of such a release persisted resumes at this step, and its
	// status is rewritten with the current names.
	Was []string
	// Run does or polls the step's work, with what the actor's Declare
	// observed in this pass (seen).
	Run func(ctx *Context[T], seen S) (done bool, err error)
	// Timeout, when set, bounds how long the step may take from when it
	// became current (status.operation.stepStartedAt). Past it, every run
	// that does not report done counts as a failed attempt, with the
	// flow's backoff and MaxAttempts as for errors; a retry rescue starts
	// the clock again.
	Timeout time.Duration
}

// FlowInterrupter is implemented by actors that cancel a running flow when
// the desired state moved on, for example a scale-out that arrives while a
// drain runs (design principle 7). The framework asks on every pass of a
// Running flow, before its step runs (not while the flow is Failed: a
// failed flow waits for a rescue), with what Declare observed in this pass
// (seen). When InterruptFlow reports true the flow ends Aborted with
// reason as its message, an Event OperationInterrupted records it, and
// Observe runs in the same pass.
type FlowInterrupter[T Object, S any] interface {
	InterruptFlow(ctx *Context[T], seen S, op *commonv1.Operation) (reason string, interrupt bool)
}

func (f Flow[T, S]) withDefaults() Flow[T, S] {
	if f.MaxAttempts <= 0 {
		f.MaxAttempts = DefaultMaxAttempts
	}
	if f.Poll <= 0 {
		f.Poll = DefaultPoll
	}
	f.Backoff = f.Backoff.withDefaults(DefaultStepBackoff)
	return f
}

func (f Flow[T, S]) validate() error {
	if f.Name == "" || len(f.Steps) == 0 {
		return fmt.Errorf("framework: flow %q needs a name and steps", f.Name)
	}
	seen := map[string]bool{}
	for _, s := range f.Steps {
		if s.Name == "" || s.Run == nil || seen[s.Name] {
			return fmt.Errorf("framework: flow %q: step %q is unnamed, has no Run or is not unique", f.Name, s.Name)
		}
		seen[s.Name] = true
		for _, was := range s.Was {
			if was == "" || seen[was] {
				return fmt.Errorf("framework: flow %q: step %q: earlier name %q is empty or not unique", f.Name, s.Name, was)
			}
			seen[was] = true
		}
	}
	return nil
}

// stepNames returns the names of f's steps, in order.
func (f Flow[T, S]) stepNames() []string {
	names := make([]string, len(f.Steps))
	for i, s := range f.Steps {
		names[i] = s.Name
	}
	return names
}

// step returns the step named name now or in an earlier release (Was).
func (f *Flow[T, S]) step(name string) *Step[T, S] {
	for i := range f.Steps {
		if f.Steps[i].Name == name || slices.Contains(f.Steps[i].Was, name) {
			return &f.Steps[i]
		}
	}
	return nil
}

// rename rewrites the step names op persisted with the names f's steps
// have now, so that an operation an earlier release started shows and
// resumes under today's names. Names f does not know stay as they are.
func (f *Flow[T, S]) rename(op *commonv1.Operation) {
	current := func(name string) string {
		if s := f.step(name); s != nil {
			return s.Name
		}
		return name
	}
	for i, name := range op.Steps {
		op.Steps[i] = current(name)
	}
	for i, name := range op.Skipped {
		op.Skipped[i] = current(name)
	}
	if op.Step != "" {
		op.Step = current(op.Step)
	}
}

// StartFlow returns an action that starts the registered flow name,
// recording trigger (what caused it) in status.operation.trigger. The
// action is named "Start<Name>". It fails if the flow is not registered
// or another flow is active.
func StartFlow[T Object](name, trigger string) Action[T] {
	return Named("Start"+reasonFrom(name), func(c *Context[T]) error {
		core := c.Obj.StatusCore()
		steps, ok := c.r.flowSteps[name]
		if !ok {
			return Terminal(fmt.Errorf("flow %q is not registered", name))
		}
		if op := core.Operation; op != nil && op.Phase.Active() {
			return fmt.Errorf("flow %q is %s", op.Name, op.Phase)
		}
		core.Operation = commonv1.NewOperation(name, trigger, steps, metav1.Now())
		c.Log.Info("Starting operation", "operation", name, "trigger", trigger)
		return nil
	})
}

// runOperation runs the active operation. It reports whether the
// operation owned this pass (the actor is not observed then).
func (p *pass[T, S]) runOperation() (bool, reconcile.Result, error) {
	op := p.obj.StatusCore().Operation
	p.setOperationCondition(op)
	if op == nil || !op.Phase.Active() {
		return false, reconcile.Result{}, nil
	}
	if f := p.r.flows[op.Name]; f != nil {
		f.rename(op)
	}
	if op.Phase == commonv1.PhaseFailed {
		// The flow waits for a rescue. The declarative phase ran, and runs
		// again every Resync, so that status keeps telling the truth.
		p.c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonOperationFailed, failedMessage(op))
		return true, reconcile.Result{RequeueAfter: p.r.opts.Resync}, nil
	}
	if p.interrupt(op) {
		p.setOperationCondition(op)
		return false, reconcile.Result{}, nil
	}
	res, err := p.runStep(op)
	p.setOperationCondition(op)
	return true, res, err
}

// interrupt asks the actor whether the running operation must stop, and
// aborts it if so.
func (p *pass[T, S]) interrupt(op *commonv1.Operation) bool {
	i, ok := p.r.opts.Actor.(FlowInterrupter[T, S])
	if !ok {
		return false
	}
	reason, stop := i.InterruptFlow(p.c, p.seen, op)
	if !stop {
		return false
	}
	step := op.Step
	op.Message = "Interrupted: " + reason
	op.Finish(commonv1.PhaseAborted, metav1.Now())
	p.log.Info("Operation interrupted", "operation", op.Name, "step", step, "reason", reason)
	p.c.Event(corev1.EventTypeNormal, ReasonOperationInterrupted, "Operation %s interrupted at step %s: %s",
		op.Name, step, reason)
	return true
}

// runStep runs the current step of a running operation.
func (p *pass[T, S]) runStep(op *commonv1.Operation) (reconcile.Result, error) {
	f := p.r.flows[op.Name]
	var s *Step[T, S]
	if f != nil && int(op.Current) < len(op.Steps) {
		s = f.step(op.Steps[op.Current])
	}
	if s == nil {
		p.processed = true
		op.LastError = fmt.Sprintf("flow %q step %q is not registered", op.Name, op.Step)
		op.Finish(commonv1.PhaseFailed, metav1.Now())
		p.c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonOperationFailed, failedMessage(op))
		return reconcile.Result{}, nil
	}
	setRunning(p.c, op)
	if op.NextAttemptAt != nil {
		if wait := time.Until(op.NextAttemptAt.Time); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if err := p.c.RequireFresh(); err != nil {
		return reconcile.Result{}, err
	}
	if op.StepStartedAt == nil { // written before the field existed
		now := metav1.Now()
		op.StepStartedAt = &now
	}
	done, err := s.Run(p.c, p.seen)
	p.processed = true
	if err == nil && !done && s.Timeout > 0 && time.Since(op.StepStartedAt.Time) >= s.Timeout {
		err = fmt.Errorf("step %s not done within its timeout of %s", s.Name, s.Timeout)
	}
	return p.stepResult(f, s, op, done, err)
}

// stepResult moves the operation on after a run of step s.
func (p *pass[T, S]) stepResult(f *Flow[T, S], s *Step[T, S], op *commonv1.Operation, done bool, err error) (reconcile.Result, error) {
	log := p.log.WithValues("operation", op.Name, "step", s.Name)
	switch {
	case err != nil && classify(err) == classConflict:
		return reconcile.Result{}, err
	case err != nil:
		return p.stepFailed(f, op, err)
	case !done:
		if op.Attempts > 0 && recovered(op, f.recoveryWindow()) {
			log.Info("Step recovered, attempts reset", "attempts", op.Attempts)
			op.ResetAttempts()
		}
		log.V(1).Info("Step in progress")
		return reconcile.Result{RequeueAfter: f.Poll}, nil
	}
	metrics.ActionsTotal.WithLabelValues(p.r.kind, op.Name+"/"+s.Name).Inc()
	log.Info("Step completed")
	now := metav1.Now()
	op.SetCurrent(op.Current+1, now)
	if int(op.Current) >= len(op.Steps) {
		op.Finish(commonv1.PhaseSucceeded, now)
		log.Info("Operation succeeded")
	} else {
		setRunning(p.c, op) // name the next step now: one status write per step
	}
	return reconcile.Result{RequeueAfter: p.r.opts.ActionRequeue}, nil
}

// recoveryWindow is how long a step must run without error after a
// failed attempt for its failed attempts to be forgotten: the flow's
// longest backoff.
func (f *Flow[T, S]) recoveryWindow() time.Duration { return f.Backoff.Max }

// recovered reports whether a step with failed attempts has run without
// error for window since its last retry was due. A run that is not done
// right after a failure proves nothing: a step that sends again what
// failed, and polls it, runs without error between two refusals of the
// same statement, and forgetting its attempts there would retry it for
// ever. Only a step that went on without failing for a while has left
// its failures behind; MaxAttempts then bounds the next streak, so that a
// step of hours is not failed by transient errors spread over it.
func recovered(op *commonv1.Operation, window time.Duration) bool {
	return op.NextAttemptAt != nil && time.Since(op.NextAttemptAt.Time) >= window
}

// setRunning sets Synced=False/OperationRunning naming the current step.
func setRunning[T Object](c *Context[T], op *commonv1.Operation) {
	c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonOperationRunning,
		fmt.Sprintf("Operation %s: step %s %s", op.Name, op.Progress, op.Step))
}

// stepFailed counts a failed attempt and fails the flow once it is out of
// attempts or the error is terminal.
func (p *pass[T, S]) stepFailed(f *Flow[T, S], op *commonv1.Operation, err error) (reconcile.Result, error) {
	op.Attempts++
	op.LastError = err.Error()
	if IsTerminal(err) || op.Attempts >= f.MaxAttempts {
		p.log.Error(err, "Operation failed", "operation", op.Name, "step", op.Step, "attempts", op.Attempts)
		op.Finish(commonv1.PhaseFailed, metav1.Now())
		p.c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonOperationFailed, failedMessage(op))
		return reconcile.Result{}, nil
	}
	wait := f.Backoff.Step(op.Attempts)
	next := metav1.NewTime(time.Now().Add(wait))
	op.NextAttemptAt = &next
	p.log.Info("Step failed, retrying", "operation", op.Name, "step", op.Step,
		"attempts", op.Attempts, "retryAfter", wait, "error", err.Error())
	return reconcile.Result{RequeueAfter: wait}, nil
}

// setOperationCondition mirrors the operation's phase in OperationFailed:
// True while Failed, False otherwise once a flow has run.
func (p *pass[T, S]) setOperationCondition(op *commonv1.Operation) {
	if op == nil {
		return
	}
	switch op.Phase {
	case commonv1.PhaseFailed:
		p.c.SetCondition(ConditionOperationFailed, metav1.ConditionTrue, ReasonOperationFailed, failedMessage(op))
	case commonv1.PhaseRunning:
		p.c.SetCondition(ConditionOperationFailed, metav1.ConditionFalse, ReasonOperationRunning, "")
	case commonv1.PhaseSucceeded:
		p.c.SetCondition(ConditionOperationFailed, metav1.ConditionFalse, ReasonOperationSucceeded, "")
	case commonv1.PhaseAborted:
		p.c.SetCondition(ConditionOperationFailed, metav1.ConditionFalse, ReasonOperationAborted, op.Message)
	}
}

func failedMessage(op *commonv1.Operation) string {
	return fmt.Sprintf("Operation %s failed at step %s (%s) after %d attempts: %s; set annotation %s to retry, skip or abort",
		op.Name, op.Step, op.Progress, op.Attempts, op.LastError, commonv1.RescueAnnotation)
}

// rescueIfAsked acts on the rescue annotation, if the object has one.
func (p *pass[T, S]) rescueIfAsked() error {
	value, found := p.obj.GetAnnotations()[commonv1.RescueAnnotation]
	if !found {
		return nil
	}
	return p.rescue(value)
}

// rescue acts on the rescue annotation. The annotation is removed first, so
// a rescue is applied at most once even if the pass fails afterwards; a
// rescue lost that way is visible (the operation did not change) and can be
// set again.
func (p *pass[T, S]) rescue(value string) error {
	err := p.patchMeta(p.c, func(o client.Object) {
		a := o.GetAnnotations()
		delete(a, commonv1.RescueAnnotation)
		o.SetAnnotations(a)
	})
	if err != nil {
		return fmt.Errorf("remove %s: %w", commonv1.RescueAnnotation, err)
	}
	verb, err := commonv1.ParseRescue(value)
	op := p.obj.StatusCore().Operation
	switch {
	case err != nil:
		p.c.Event(corev1.EventTypeWarning, "InvalidRescue", "%s", err.Error())
		return nil
	case op == nil || !op.Phase.Active():
		p.c.Event(corev1.EventTypeWarning, "RescueIgnored", "Rescue %q ignored: no running or failed operation", verb)
		return nil
	}
	if err := applyRescue(op, verb, metav1.Now()); err != nil {
		return err
	}
	p.setOperationCondition(op)
	p.log.Info("Operation rescued", "operation", op.Name, "rescue", verb)
	p.c.Event(corev1.EventTypeNormal, ReasonOperationRescued, "Operation %s: %s, now %s at %s",
		op.Name, verb, op.Phase, op.Progress)
	return nil
}

// applyRescue changes op as verb asks.
func applyRescue(op *commonv1.Operation, verb commonv1.Rescue, now metav1.Time) error {
	switch verb {
	case commonv1.RescueRetry:
		op.Phase, op.FinishedAt = commonv1.PhaseRunning, nil
		op.SetCurrent(op.Current, now)
	case commonv1.RescueSkip:
		op.Skipped = append(op.Skipped, op.Step)
		op.Phase, op.FinishedAt = commonv1.PhaseRunning, nil
		op.SetCurrent(op.Current+1, now)
		if int(op.Current) >= len(op.Steps) {
			op.Finish(commonv1.PhaseSucceeded, now)
		}
	case commonv1.RescueAbort:
		op.Message = "Aborted by the " + commonv1.RescueAnnotation + " annotation"
		op.Finish(commonv1.PhaseAborted, now)
	default:
		return errors.New("unknown rescue " + string(verb))
	}
	return nil
}
