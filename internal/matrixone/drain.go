package matrixone

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// A CN leaves its set (the scale-in flow, scale.go) or restarts (the
// rolling-restart flow, restart.go) only after a drain: the controller
// sets it Draining in HAKeeper (mo_ctl), the proxies stop sending it new
// sessions and move its sessions, between two statements, to Working CNs,
// and when it holds none and its lock tables moved (or at
// spec.drainTimeout) the flow goes on: the StatefulSet may remove it, or
// the controller restart it. The flow's progress is status.operation; what
// each CN's drain has done is recorded on its pod, a fact that goes with
// the pod: a restarted CN starts undrained, and the controller sets it
// Working again in HAKeeper, which remembers the work state of a store
// that comes back soon.
const (
	// AnnotationDrainStarted is when the controller set the pod's CN
	// draining (RFC 3339).
	AnnotationDrainStarted = "matrixone.steward.dev/drain-started"
	// AnnotationDrained is when the drain ended (RFC 3339): the CN held no
	// session, or the timeout passed. The pod may go.
	AnnotationDrained = "matrixone.steward.dev/drained"
	// AnnotationLocksMoving is when the controller announced the CN's
	// restart to the TN's lock table allocator (RFC 3339), once the CN
	// held no session: the allocator moves the CN's lock tables to other
	// CNs, and the drain ends when it says the CN may stop.
	AnnotationLocksMoving = "matrixone.steward.dev/locks-moving"
	// AnnotationUndrained is when the controller last set the pod's CN
	// Working again (RFC 3339): HAKeeper's view shows it some seconds
	// later, and until then the CN is not set Working again.
	AnnotationUndrained = "matrixone.steward.dev/undrained"
)

// drainOf is the pod's drain as its annotations record it: started is
// zero when the pod is not draining.
func drainOf(p *corev1.Pod) (started time.Time, done bool) {
	started, _ = time.Parse(time.RFC3339, p.Annotations[AnnotationDrainStarted])
	_, done = p.Annotations[AnnotationDrained]
	return started, done
}

// leaving returns the pods above the spec's replicas, by ordinal: they
// leave the set once drained (the scale-in flow).
func (st *storeState) leaving() []*corev1.Pod {
	var out []*corev1.Pod
	for _, ordinal := range slices.Sorted(maps.Keys(st.pods)) {
		if ordinal >= int(st.set.Replicas) {
			out = append(out, st.pods[ordinal])
		}
	}
	return out
}

// serving returns a CN the controller may send its statements to and the
// proxies may move sessions to: ready, kept by the set, not draining, and
// Working to HAKeeper. nil when there is none.
func (st *storeState) serving() *corev1.Pod {
	for _, ordinal := range slices.Sorted(maps.Keys(st.pods)) {
		p := st.pods[ordinal]
		if started, _ := drainOf(p); ordinal >= int(st.set.Replicas) || !started.IsZero() || !workload.IsReady(p) {
			continue
		}
		if s := st.store(p.Name); s.State == mov1.StoreUp && s.WorkState == wire.WorkStateWorking {
			return p
		}
	}
	return nil
}

// toUndrain returns the CNs the set keeps that HAKeeper has Draining or
// Drained, or whose pods record a drain, for undrain to set Working again
// (a restarted CN, a scale-in undone); none when there are none. The CN a
// rolling restart drains (the first stale one the set keeps) stays so,
// and one just set Working is not set so again before HAKeeper's view
// can show it (undrainUnseen): one undrain, one Undrained Event.
func (c *StoreSetController[T]) toUndrain(st *storeState) []*corev1.Pod {
	var restarting string
	if stale := st.staleKept(); len(stale) > 0 {
		restarting = stale[0].Name
	}
	var pods []*corev1.Pod
	for _, ordinal := range slices.Sorted(maps.Keys(st.pods)) {
		p := st.pods[ordinal]
		if ordinal >= int(st.set.Replicas) || p.Name == restarting || !workload.IsReady(p) {
			continue
		}
		started, _ := drainOf(p)
		s := st.store(p.Name)
		drainedToHAKeeper := s.State == mov1.StoreUp && (s.WorkState == wire.WorkStateDraining || s.WorkState == wire.WorkStateDrained)
		if !started.IsZero() || drainedToHAKeeper && !c.undrainUnseen(st, p) {
			pods = append(pods, p)
		}
	}
	return pods
}

// undrain sets Working again, or restarts, each CN of pods (undrainOne).
func (c *StoreSetController[T]) undrain(ctx *framework.Context[T], st *storeState, pods []*corev1.Pod) error {
	for _, p := range pods {
		if err := c.undrainOne(ctx, st, p); err != nil {
			return err
		}
	}
	return nil
}

// undrainUnseen reports whether HAKeeper's view may not show yet that p's
// CN was set Working: the controller did it less than DrainSettle before
// the view was answered (the probes' answers lag behind mo_ctl).
func (c *StoreSetController[T]) undrainUnseen(st *storeState, p *corev1.Pod) bool {
	undrained, err := time.Parse(time.RFC3339, p.Annotations[AnnotationUndrained])
	return err == nil && st.viewAt.Sub(undrained) <= c.opts.DrainSettle
}

// undrainOne sets the CN of p Working and clears its drain; or restarts it
// when its lock tables had moved: MatrixOne cannot take an announced lock
// service restart back (the CN would refuse new transactions), and a
// restart gives the CN a new lock service. It comes back undrained.
func (c *StoreSetController[T]) undrainOne(ctx *framework.Context[T], st *storeState, p *corev1.Pod) error {
	if _, moving := p.Annotations[AnnotationLocksMoving]; moving {
		if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		ctx.Log.Info("Restarting a CN the set keeps after its lock tables moved", "pod", p.Name)
		ctx.Event(corev1.EventTypeNormal, mov1.EventStoreRestarted,
			"Restarting %s: the set keeps it, and its lock tables had moved away", p.Name)
		return nil
	}
	// Through the CN itself: it is up, and mo_ctl goes to HAKeeper.
	if err := c.setWorkState(ctx, st, p, p, mosql.Working); err != nil {
		return err
	}
	undrained := map[string]string{AnnotationUndrained: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := annotate(ctx, ctx.Client, p, undrained, AnnotationDrainStarted, AnnotationDrained, AnnotationLocksMoving); err != nil {
		return err
	}
	ctx.Log.Info("Set a CN working again", "pod", p.Name)
	ctx.Event(corev1.EventTypeNormal, mov1.EventUndrained, "Set %s working again: the set keeps it", p.Name)
	return nil
}

// drain moves the drain of pods one step on: it starts it, has HAKeeper
// record it, and ends it when the CNs hold no session and their lock
// tables moved, or at timeout. done once every pod of pods has drained;
// each call does at most one thing, the next call looks again. The drain
// of each pod is recorded on the pod (AnnotationDrainStarted, ...), so a
// step that runs again, in this manager or the next, goes on where it was.
func (c *StoreSetController[T]) drain(ctx *framework.Context[T], st *storeState, pods []*corev1.Pod,
	timeout time.Duration) (done bool, err error) {
	var start []*corev1.Pod
	for _, p := range pods {
		if started, _ := drainOf(p); started.IsZero() {
			start = append(start, p)
		}
	}
	via := st.serving()
	if len(start) > 0 {
		return false, c.startDrain(ctx, st, start, via)
	}
	for _, p := range pods {
		started, done := drainOf(p)
		if done {
			continue
		}
		ws := st.store(p.Name).WorkState
		since := st.now.Sub(started)
		switch {
		case via == nil && st.set.Replicas == 0:
			return false, c.endDrain(ctx, p, "no CN is left to take its sessions", corev1.EventTypeNormal)
		case since >= timeout:
			why := fmt.Sprintf("the drain did not end within %s (spec.drainTimeout): sessions it still held are cut", timeout)
			return false, c.endDrain(ctx, p, why, corev1.EventTypeWarning)
		case !st.viewOK:
			// Which CN serves, and whether HAKeeper has this one Draining,
			// are HAKeeper's to say.
			why := fmt.Sprintf("%s drains since %s and waits for a view of HAKeeper (timeout %s): no view of HAKeeper: %s",
				p.Name, started.UTC().Format(time.RFC3339), timeout, st.viewErr)
			ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, mov1.ReasonHAKeeperUnreachable, why)
			ctx.SetReady(false, mov1.ReasonHAKeeperUnreachable, why)
			return false, nil
		case via == nil:
			setDraining(ctx, fmt.Sprintf("%s drains since %s: no other CN is serving to take its sessions (timeout %s)",
				p.Name, started.UTC().Format(time.RFC3339), timeout))
			return false, nil
		case ws != wire.WorkStateDraining && ws != wire.WorkStateDrained:
			// Not recorded yet (HAKeeper's view lags), or the statement
			// was lost: mo_ctl again, as often as the view says so.
			if since > c.opts.DrainSettle {
				return false, c.startDrain(ctx, st, []*corev1.Pod{p}, via)
			}
			setDraining(ctx, fmt.Sprintf("%s drains: HAKeeper does not say Draining yet", p.Name))
			return false, nil
		}
		n, err := c.sessions(ctx, st, via, p)
		if err != nil {
			setDraining(ctx, fmt.Sprintf("%s drains; counting its sessions failed: %v", p.Name, err))
			return false, nil
		}
		if n > 0 || since < c.opts.DrainSettle {
			// The start, not the time since: the message stays the same
			// from pass to pass while the count does, and status is not
			// rewritten every pass.
			setDraining(ctx, fmt.Sprintf("%s drains since %s: %d sessions (timeout %s)", p.Name, started.UTC().Format(time.RFC3339), n, timeout))
			return false, nil
		}
		return false, c.moveLocks(ctx, st, p)
	}
	return true, nil
}

// moveLocks is the last step of a drain: MatrixOne's lock service restart
// handshake. A CN that stops while it holds lock tables leaves every
// transaction that locks a row of one of them waiting until the TN's lock
// table allocator gives up on the CN (a write stall of tens of seconds,
// seen after a scale-in). So once the CN holds no session, the controller
// announces its restart to the allocator, which moves its lock tables to
// other CNs as its transactions end, and the drain ends when the
// allocator says the CN may stop (or at the drain's timeout).
func (c *StoreSetController[T]) moveLocks(ctx *framework.Context[T], st *storeState, p *corev1.Pod) error {
	uuid := wire.StoreID(st.set.Namespace, p.Name)
	if _, announced := p.Annotations[AnnotationLocksMoving]; !announced {
		err := c.views.viaLogPod(st.logPods, func(base string) error {
			return hakeeper.StartLockRestart(ctx, c.views.http, base, uuid)
		})
		if err != nil {
			return fmt.Errorf("announce the restart of %s's lock service: %w", p.Name, err)
		}
		ctx.Log.Info("Moving a CN's lock tables", "pod", p.Name)
		return annotate(ctx, ctx.Client, p, map[string]string{AnnotationLocksMoving: st.now.UTC().Format(time.RFC3339)})
	}
	var status wire.LockRestart
	err := c.views.viaLogPod(st.logPods, func(base string) (err error) {
		status, err = hakeeper.LockRestartStatus(ctx, c.views.http, base, uuid)
		return err
	})
	switch {
	case err != nil:
		setDraining(ctx, fmt.Sprintf("%s drains: asking whether its lock tables moved failed: %v", p.Name, err))
		return nil
	case !status.CanRestart:
		setDraining(ctx, fmt.Sprintf("%s drains: its lock tables move to other CNs (%d transactions hold locks there)", p.Name, status.RemainTxn))
		return nil
	}
	return c.endDrain(ctx, p, "it holds no session and its lock tables moved", corev1.EventTypeNormal)
}

func setDraining[T framework.Object](ctx *framework.Context[T], message string) {
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, mov1.ReasonDraining, message)
	ctx.SetReady(false, mov1.ReasonDraining, message)
}

// startDrain records the drain's start on each pod, then sets its CN
// Draining through the CN via (through itself when there is none).
func (c *StoreSetController[T]) startDrain(ctx *framework.Context[T], st *storeState, pods []*corev1.Pod, via *corev1.Pod) error {
	for _, p := range pods {
		if started, _ := drainOf(p); started.IsZero() {
			now := map[string]string{AnnotationDrainStarted: st.now.UTC().Format(time.RFC3339)}
			if err := annotate(ctx, ctx.Client, p, now); err != nil {
				return err
			}
			ctx.Log.Info("Draining a CN", "pod", p.Name)
			ctx.Event(corev1.EventTypeNormal, mov1.EventDraining, "Draining %s: its sessions move to the other CNs", p.Name)
		}
		through := via
		if through == nil {
			through = p
		}
		if err := c.setWorkState(ctx, st, through, p, mosql.Draining); err != nil {
			return err
		}
	}
	return nil
}

// endDrain records the end of pod's drain: it may go.
func (c *StoreSetController[T]) endDrain(ctx *framework.Context[T], pod *corev1.Pod, why, eventType string) error {
	done := map[string]string{AnnotationDrained: time.Now().UTC().Format(time.RFC3339)}
	if err := annotate(ctx, ctx.Client, pod, done); err != nil {
		return err
	}
	reason := mov1.EventDrained
	if eventType == corev1.EventTypeWarning {
		reason = mov1.EventDrainTimedOut
	}
	ctx.Log.Info("A CN's drain ended", "pod", pod.Name, "why", why)
	ctx.Event(eventType, reason, "%s drained: %s", pod.Name, why)
	return nil
}

// target is the CN via as the admin reaches it: its pod's SQL address,
// as root with the LogSet's password.
func (c *StoreSetController[T]) target(ctx *framework.Context[T], st *storeState, via *corev1.Pod) (mosql.Target, error) {
	return rootTarget(ctx, ctx.Client, ctx.Reader, st.set.Namespace, st.set.Log.RootPasswordSecret(), via)
}

// rootTarget is the CN pod via as root reaches it: its pod's SQL address,
// with the password of the Secret secret. The cache holds a generated
// Secret; a user's is read from the API server (live).
func rootTarget(ctx context.Context, cached, live client.Reader, namespace, secret string, via *corev1.Pod) (mosql.Target, error) {
	password, err := framework.ReadPassword(ctx, cached, namespace, secret)
	if apierrors.IsNotFound(err) {
		password, err = framework.ReadPassword(ctx, live, namespace, secret)
	}
	if err != nil {
		return mosql.Target{}, err
	}
	return mosql.Target{Addr: net.JoinHostPort(via.Status.PodIP, strconv.Itoa(build.SQLPort)), Password: password}, nil
}

func (c *StoreSetController[T]) setWorkState(ctx *framework.Context[T], st *storeState, via, pod *corev1.Pod, state mosql.WorkState) error {
	t, err := c.target(ctx, st, via)
	if err != nil {
		return err
	}
	return c.opts.Admin.SetWorkState(ctx, t, wire.StoreID(st.set.Namespace, pod.Name), state)
}

func (c *StoreSetController[T]) sessions(ctx *framework.Context[T], st *storeState, via, pod *corev1.Pod) (int, error) {
	t, err := c.target(ctx, st, via)
	if err != nil {
		return 0, err
	}
	return c.opts.Admin.Sessions(ctx, t, wire.StoreID(st.set.Namespace, pod.Name))
}

// annotate sets the annotations set on pod and removes those named
// remove, in one merge patch.
func annotate(ctx context.Context, c client.Client, pod *corev1.Pod, set map[string]string, remove ...string) error {
	p := pod.DeepCopy()
	base := client.MergeFrom(pod)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	maps.Copy(p.Annotations, set)
	for _, k := range remove {
		delete(p.Annotations, k)
	}
	if err := c.Patch(ctx, p, base); err != nil {
		return fmt.Errorf("annotate pod %s: %w", pod.Name, err)
	}
	return nil
}
