package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stewardhq/steward/internal/framework/metrics"
)

// pass is one reconcile pass over one object.
type pass[T Object, S any] struct {
	r   *Reconciler[T, S]
	log logr.Logger

	obj  T
	orig T // obj as read, before defaults: the base of the status patch
	c    *Context[T]
	// seen is what Declare observed in this pass, for Observe, the flow's
	// step and InterruptFlow (S's zero value without a Declarer).
	seen S
	// processed: the pass acted on the spec of the object's generation
	// (Observe returned, a flow step ran, Finalize returned); only then is
	// observedGeneration stamped, and only if the pass did not fail.
	processed bool
	// conflict: the pass hit a conflict and is requeued quietly.
	conflict bool
}

// run is the reconcile pass of the design (docs/design/framework.md).
func (p *pass[T, S]) run(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p.obj = newObject[T]()
	if err := p.r.client.Get(ctx, req.NamespacedName, p.obj); err != nil {
		if apierrors.IsNotFound(err) {
			p.r.setInFlight(req.NamespacedName, "")
			p.r.staleRead(req.NamespacedName, "")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("get %s %s: %w", p.r.kind, req.NamespacedName, err)
	}
	if p.r.staleRead(req.NamespacedName, p.obj.GetResourceVersion()) {
		// The cache has not seen this controller's own last write: a pass
		// on it would only be refused (409) writing status. The write's
		// watch event brings the object again; the requeue is a safety net.
		p.log.V(1).Info("Cache behind this controller's last write, waiting for it")
		return reconcile.Result{RequeueAfter: staleReadRequeue}, nil
	}
	if !p.obj.GetDeletionTimestamp().IsZero() {
		return p.reconcileDelete(ctx)
	}
	if !controllerutil.ContainsFinalizer(p.obj, p.r.opts.Finalizer) {
		err := p.patchMeta(ctx, func(o client.Object) { controllerutil.AddFinalizer(o, p.r.opts.Finalizer) })
		if err != nil {
			return p.finishWithoutStatus(fmt.Errorf("add finalizer: %w", err))
		}
	}
	p.begin(ctx)
	res, err := p.reconcileNormal()
	return p.finish(res, err)
}

// begin snapshots the object, applies defaults and builds the Context.
func (p *pass[T, S]) begin(ctx context.Context) {
	p.orig = p.obj.DeepCopyObject().(T)
	if d, ok := p.r.opts.Actor.(Defaulter[T]); ok {
		d.Default(p.obj)
	}
	p.c = &Context[T]{
		Context:  ctx,
		Obj:      p.obj,
		Client:   p.r.client,
		Reader:   p.r.reader,
		Scheme:   p.r.scheme,
		Recorder: p.r.recorder,
		Log:      p.log,
		r:        p.r.core,
		applied:  map[childKey]bool{},
		configs:  map[string]bool{},
	}
}

// reconcileDelete calls Finalize until it is done, then removes the
// finalizer.
func (p *pass[T, S]) reconcileDelete(ctx context.Context) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(p.obj, p.r.opts.Finalizer) {
		return reconcile.Result{}, nil
	}
	p.begin(ctx)
	p.c.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonDeleting, "Finalizing before deletion")
	done, err := p.r.opts.Actor.Finalize(p.c)
	p.processed = true
	if err != nil {
		return p.finish(reconcile.Result{}, fmt.Errorf("finalize: %w", err))
	}
	if !done {
		p.log.V(1).Info("Finalize not done yet, requeueing")
		wait := p.r.opts.WaitBackoff.Since(time.Since(p.obj.GetDeletionTimestamp().Time))
		return p.finish(reconcile.Result{RequeueAfter: wait}, nil)
	}
	err = p.patchMeta(ctx, func(o client.Object) { controllerutil.RemoveFinalizer(o, p.r.opts.Finalizer) })
	if err != nil && !apierrors.IsNotFound(err) {
		return p.finishWithoutStatus(fmt.Errorf("remove finalizer: %w", err))
	}
	p.log.Info("Finalized, finalizer removed")
	p.r.setInFlight(client.ObjectKeyFromObject(p.obj), "")
	p.r.forgetOwner(p.obj.GetUID())
	return reconcile.Result{}, nil
}

// reconcileNormal runs steps 3 to 6 of the pass: rescue, pause,
// validation, dependencies, the declarative phase, then the running
// operation or the actor's action.
func (p *pass[T, S]) reconcileNormal() (reconcile.Result, error) {
	c := p.c
	// A rescue acts before anything else, so that a user can abort, retry
	// or skip even while the object is paused or its dependencies are down.
	if err := p.rescueIfAsked(); err != nil {
		return reconcile.Result{}, err
	}
	if IsPaused(p.obj) {
		c.SetCondition(ConditionPaused, metav1.ConditionTrue, ReasonPaused, "Reconciliation is paused")
		return reconcile.Result{}, nil
	}
	c.SetCondition(ConditionPaused, metav1.ConditionFalse, ReasonNotPaused, "")

	if invalidSpecObserved(p.obj) {
		// The spec was found invalid at this generation: wait for a new one.
		return reconcile.Result{}, nil
	}
	if v, ok := p.r.opts.Actor.(Validator[T]); ok {
		if err := v.Validate(p.obj); err != nil {
			return reconcile.Result{}, InvalidSpec(err)
		}
	}
	if cc, ok := p.r.opts.Actor.(ClashChecker[T]); ok {
		if err := cc.Clashes(c, p.r.client, p.obj); err != nil {
			// A verdict (field errors) is not Ready, saying with what it
			// clashes, and is looked at again every clashRequeue: the
			// other object going away triggers no pass of this one, and an
			// error's backoff would grow to minutes. A failure to read is
			// an error.
			if !isVerdict(err) {
				return reconcile.Result{}, fmt.Errorf("clash: %w", err)
			}
			c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonClash, err.Error())
			c.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonClash, err.Error())
			return reconcile.Result{RequeueAfter: clashRequeue}, nil
		}
	}
	if err := p.checkChildren(); err != nil {
		return reconcile.Result{}, err
	}

	ready, res, err := p.dependencies()
	if err != nil || !ready {
		return res, err
	}
	if d, ok := p.r.opts.Actor.(Declarer[T, S]); ok {
		seen, err := d.Declare(c)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("declare: %w", err)
		}
		p.seen = seen
	}
	if handled, res, err := p.runOperation(); handled {
		return res, err
	}
	return p.observe()
}

// checkChildren has the API server validate the children a ChildRenderer
// renders for the spec (see ChildRenderer), when they differ from the
// last it checked for this object and from those the webhook checked
// (ChildrenCheckedAnnotation), and marks the spec invalid when it
// would reject them. A check that cannot be made (the API server did not
// answer in time) lets the pass go on: applying the children reports the
// same errors, less clearly.
func (p *pass[T, S]) checkChildren() error {
	renderer, ok := p.r.opts.Actor.(ChildRenderer[T])
	if !ok {
		return nil
	}
	children := renderer.RenderChildren(p.obj)
	hash, err := childrenHash(p.r.scheme, children)
	if err != nil {
		return err
	}
	uid := string(p.obj.GetUID())
	if checked, err := p.r.checks.get(uid, hash); checked {
		return err
	}
	if p.obj.GetAnnotations()[ChildrenCheckedAnnotation] == hash { // the webhook's
		p.r.checks.put(uid, hash, nil)
		return nil
	}
	err = p.r.checker.check(p.c, p.r.gvk.GroupKind(), p.obj.GetName(), children)
	if errors.Is(err, errChildrenUnchecked) {
		p.log.Info("Could not dry-run the children; applying them unchecked", "error", err.Error())
		return nil
	}
	if err != nil {
		err = InvalidSpec(err)
	}
	p.r.checks.put(uid, hash, err)
	return err
}

// invalidSpecObserved reports whether Synced says the current generation's
// spec is invalid.
func invalidSpecObserved(obj Object) bool {
	s := meta.FindStatusCondition(obj.StatusCore().Conditions, ConditionSynced)
	return s != nil && s.Reason == ReasonInvalidSpec && s.ObservedGeneration == obj.GetGeneration()
}

// resyncAfter is how soon an in-sync obj is observed again: Resync when
// obj is Ready; otherwise ResyncNotReady (when that is set and shorter than
// Resync), growing with the time obj has not been Ready (Ready's last
// transition) up to ResyncNotReadyMax, which may exceed Resync: a cluster
// that just stopped being Ready, or is being created, is polled often,
// and one that stays unreachable less and less. Whatever a watch or a
// probe sees still starts a pass at once.
func (r *Reconciler[T, S]) resyncAfter(obj T) time.Duration {
	d, n, most := r.opts.Resync, r.opts.ResyncNotReady, r.opts.ResyncNotReadyMax
	ready := meta.FindStatusCondition(obj.StatusCore().Conditions, ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue {
		return d
	}
	if n <= 0 || d > 0 && n > d {
		n = d
	}
	if n <= 0 || most <= n || ready == nil {
		return n
	}
	return Backoff{Initial: n, Max: most}.Since(time.Since(ready.LastTransitionTime.Time))
}

// observe calls the actor and runs the action it returns.
func (p *pass[T, S]) observe() (reconcile.Result, error) {
	c := p.c
	action, err := p.r.opts.Actor.Observe(c, p.seen)
	if err != nil {
		return reconcile.Result{}, err
	}
	p.processed = true
	if action == nil {
		c.SetCondition(ConditionSynced, metav1.ConditionTrue, ReasonInSync, "")
		if !c.readySet {
			c.SetCondition(ConditionReady, metav1.ConditionTrue, ReasonReconciled, "")
		}
		return reconcile.Result{RequeueAfter: p.r.resyncAfter(c.Obj)}, nil
	}
	err = action(c)
	name := c.actionName
	if name == "" {
		name = actionName(action)
	}
	metrics.ActionsTotal.WithLabelValues(p.r.kind, name).Inc()
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("action %s: %w", name, err)
	}
	p.log.V(1).Info("Action taken", "action", name)
	c.SetCondition(ConditionSynced, metav1.ConditionFalse, reasonFrom(name), "Action "+name+" taken")
	if !c.readySet && meta.FindStatusCondition(p.obj.StatusCore().Conditions, ConditionReady) == nil {
		c.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonReconciling, "")
	}
	return reconcile.Result{RequeueAfter: p.r.opts.ActionRequeue}, nil
}

// dependencies gets the declared dependencies and reports whether all are
// ready; when not, the result requeues with backoff.
func (p *pass[T, S]) dependencies() (bool, reconcile.Result, error) {
	d, ok := p.r.opts.Actor.(DependencyDeclarer[T])
	if !ok {
		return true, reconcile.Result{}, nil
	}
	c := p.c
	deps, err := d.Dependencies(c)
	if err != nil {
		p.setErrorCondition(ConditionDependenciesReady, ReasonDependencyError, err)
		return false, reconcile.Result{}, fmt.Errorf("dependencies: %w", err)
	}
	var waiting []string
	for _, dep := range deps {
		why, err := p.checkDependency(dep)
		if err != nil {
			return false, reconcile.Result{}, err
		}
		if why != "" {
			waiting = append(waiting, why)
			continue
		}
		c.Dependencies = append(c.Dependencies, dep.Object)
	}
	if len(waiting) == 0 {
		c.SetCondition(ConditionDependenciesReady, metav1.ConditionTrue, ReasonDependenciesReady, "")
		return true, reconcile.Result{}, nil
	}
	msg := "Waiting for " + strings.Join(waiting, "; ")
	c.SetCondition(ConditionDependenciesReady, metav1.ConditionFalse, ReasonWaitingForDependencies, msg)
	c.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonWaitingForDependencies, msg)
	since := meta.FindStatusCondition(p.obj.StatusCore().Conditions, ConditionDependenciesReady).LastTransitionTime
	return false, reconcile.Result{RequeueAfter: p.r.opts.WaitBackoff.Since(time.Since(since.Time))}, nil
}

// checkDependency gets dep and returns why it is not ready, empty when it
// is.
func (p *pass[T, S]) checkDependency(dep Dependency) (string, error) {
	if dep.Object.GetNamespace() == "" {
		dep.Object.SetNamespace(p.obj.GetNamespace())
	}
	kind := fmt.Sprintf("%T", dep.Object)
	if gvk, err := apiutil.GVKForObject(dep.Object, p.r.scheme); err == nil {
		kind = gvk.Kind
	}
	name := kind + " " + dep.Object.GetName()
	err := p.r.client.Get(p.c, client.ObjectKeyFromObject(dep.Object), dep.Object)
	if apierrors.IsNotFound(err) {
		return name + ": not found", nil
	}
	if err != nil {
		return "", fmt.Errorf("get dependency %s: %w", name, err)
	}
	ready := dep.Ready
	if ready == nil {
		ready = IsReady
	}
	if ok, why := ready(dep.Object); !ok {
		if why == "" {
			why = "not ready"
		}
		return name + ": " + why, nil
	}
	return "", nil
}

// finish classifies err into conditions and a result, writes status once
// if it changed, and emits an Event per condition transition.
func (p *pass[T, S]) finish(res reconcile.Result, err error) (reconcile.Result, error) {
	c := p.c
	class := classify(err)
	switch class {
	case classNone:
	case classConflict:
		p.conflict = true
		p.log.V(1).Info("Conflict, requeueing", "reason", err.Error())
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	case classInvalidSpec:
		c.SetCondition(ConditionSynced, metav1.ConditionFalse, ReasonInvalidSpec, err.Error())
		c.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonInvalidSpec, err.Error())
		res, err = reconcile.Result{}, reconcile.TerminalError(err)
	case classTerminal:
		p.setErrorCondition(ConditionSynced, ReasonTerminalError, err)
		res, err = reconcile.Result{}, reconcile.TerminalError(err)
	case classTransient:
		p.setErrorCondition(ConditionSynced, ReasonReconcileError, err)
		res = reconcile.Result{}
	}
	// An invalid spec is a verdict on this generation; an error is not.
	if (p.processed && class == classNone) || class == classInvalidSpec {
		p.obj.StatusCore().ObservedGeneration = p.obj.GetGeneration()
	}
	before, after := p.orig.StatusCore().Conditions, p.obj.StatusCore().Conditions
	transitions := append(Transitions(before, after), WarningChanges(before, after)...)
	if perr := p.patchStatus(); perr != nil {
		if apierrors.IsConflict(perr) {
			p.conflict = true
			p.log.V(1).Info("Conflict writing status, requeueing")
			return reconcile.Result{RequeueAfter: conflictRequeue}, nil
		}
		if apierrors.IsNotFound(perr) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("write status: %w", perr)
	}
	p.emit(transitions)
	p.trackOperation()
	return res, err
}

// setErrorCondition sets condition t to False with an error reason. While
// t already said the same (status, reason and generation as read) its
// message is kept: every status write triggers a pass, so an error whose
// text changes with each attempt (an address, a counter, a time) would
// otherwise loop at once instead of backing off. The log has every error.
func (p *pass[T, S]) setErrorCondition(t, reason string, err error) {
	msg := err.Error()
	old := meta.FindStatusCondition(p.orig.StatusCore().Conditions, t)
	if old != nil && old.Status == metav1.ConditionFalse && old.Reason == reason &&
		old.ObservedGeneration == p.obj.GetGeneration() {
		msg = old.Message
	}
	p.c.SetCondition(t, metav1.ConditionFalse, reason, msg)
}

// finishWithoutStatus handles an error that happened before the pass began.
func (p *pass[T, S]) finishWithoutStatus(err error) (reconcile.Result, error) {
	if classify(err) == classConflict || apierrors.IsNotFound(err) {
		p.conflict = true
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	return reconcile.Result{}, err
}

// emit records an Event for every condition transition worth one.
//
// Transitions to the same reason in one pass (Ready and Progressing both
// turning to Creating, say) make one Event: the Events API keeps a series
// per object and reason, and two of them recorded within milliseconds race
// each other (a patch answered 404, a create answered 409).
func (p *pass[T, S]) emit(transitions []Transition) {
	var reasons []string
	notes := map[string][]string{}
	for _, t := range transitions {
		if !eventWorthy(t) {
			continue
		}
		note := fmt.Sprintf("%s is %s", t.New.Type, t.New.Status)
		if t.New.Message != "" {
			note += ": " + t.New.Message
		}
		if _, seen := notes[t.New.Reason]; !seen {
			reasons = append(reasons, t.New.Reason)
		}
		notes[t.New.Reason] = append(notes[t.New.Reason], note)
	}
	for _, reason := range reasons {
		kind := corev1.EventTypeNormal
		if warningReasons[reason] {
			kind = corev1.EventTypeWarning
		}
		p.c.Event(kind, reason, "%s", strings.Join(notes[reason], "; "))
	}
}

// trackOperation keeps the in-flight gauge in step with status.operation.
func (p *pass[T, S]) trackOperation() {
	name := ""
	if op := p.c.Operation(); op != nil && op.Phase.Active() {
		name = op.Name
	}
	p.r.setInFlight(client.ObjectKeyFromObject(p.obj), name)
}

// outcome is the result label of the reconcile duration metric.
func (p *pass[T, S]) outcome(res reconcile.Result, err error) string {
	switch {
	case p.conflict:
		return metrics.ResultConflict
	case err != nil && IsTerminal(err):
		return metrics.ResultTerminal
	case err != nil:
		return metrics.ResultError
	case res.RequeueAfter > 0:
		return metrics.ResultRequeue
	default:
		return metrics.ResultSuccess
	}
}

// patchMeta applies mutate to the object's metadata with a merge patch that
// fails on a conflict, and carries the new resourceVersion into the pass's
// copies so the status patch that follows does not conflict with it.
func (p *pass[T, S]) patchMeta(ctx context.Context, mutate func(client.Object)) error {
	work := p.obj.DeepCopyObject().(T)
	base := work.DeepCopyObject().(T)
	mutate(work)
	if err := p.r.client.Patch(ctx, work, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	p.wroteFrom(work, base.GetResourceVersion())
	for _, o := range []client.Object{p.obj, p.orig} {
		if reflectNil(o) {
			continue
		}
		mutate(o)
		o.SetResourceVersion(work.GetResourceVersion())
	}
	return nil
}

// patchStatus writes the status changes of the pass, if any, as one merge
// patch of the status subresource that fails on a conflict.
func (p *pass[T, S]) patchStatus() error {
	data, err := statusPatch(p.orig, p.obj)
	if err != nil || data == nil {
		return err
	}
	p.log.V(1).Info("Writing status", "patch", string(data))
	if err := p.r.client.Status().Patch(p.c, p.obj, client.RawPatch(types.MergePatchType, data),
		client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	p.wroteFrom(p.obj, p.orig.GetResourceVersion())
	return nil
}

// wroteFrom records that this controller moved obj on from the
// resourceVersion from, unless its write changed nothing: the API server
// answers a patch that leaves the object as it was (a time with
// sub-second digits the wire format drops, say) with the same
// resourceVersion, and a cache that holds that version is not stale.
func (p *pass[T, S]) wroteFrom(obj client.Object, from string) {
	if obj.GetResourceVersion() != from {
		p.r.wrote(client.ObjectKeyFromObject(obj), from)
	}
}

// statusPatch returns a JSON merge patch that turns before's status into
// after's, with before's resourceVersion as a precondition, or nil when the
// status did not change. Everything outside status (such as in-memory
// defaults of the spec) is left out.
func statusPatch(before, after client.Object) ([]byte, error) {
	full, err := client.MergeFrom(before).Data(after)
	if err != nil {
		return nil, fmt.Errorf("compute status patch: %w", err)
	}
	// Numbers stay as written: as float64 an int64 above 2^53 (an
	// OceanBase SCN) would be rounded, written rounded, and differ from
	// the pass's value again on every pass.
	var diff map[string]any
	dec := json.NewDecoder(bytes.NewReader(full))
	dec.UseNumber()
	if err := dec.Decode(&diff); err != nil {
		return nil, fmt.Errorf("decode status patch: %w", err)
	}
	status, ok := diff["status"]
	if !ok {
		return nil, nil
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": before.GetResourceVersion()},
		"status":   status,
	})
}

// reflectNil reports whether o is a nil pointer (orig before begin).
func reflectNil(o client.Object) bool {
	if o == nil {
		return true
	}
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// clashRequeue is how often an object that clashes with another is
// looked at again.
const clashRequeue = 10 * time.Second

// isVerdict reports whether err is a judgement of the object (field
// errors, one or an aggregate of them) rather than a failure to reach one.
func isVerdict(err error) bool {
	var ferr *field.Error
	var agg utilerrors.Aggregate
	return errors.As(err, &ferr) || errors.As(err, &agg)
}
