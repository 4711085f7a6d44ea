package kubectlsteward

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// SetPaused pauses (paused true) or resumes reconciliation of one object:
// its spec.paused where the kind has one, else the steward.dev/paused
// annotation (resume clears both). It then waits, up to Wait, for the
// Paused condition to say so.
func (c *CLI) SetPaused(ctx context.Context, namespace, typ, name string, paused bool) error {
	gvk, obj, err := c.get(ctx, namespace, typ, name)
	if err != nil {
		return err
	}
	patch := map[string]any{}
	_, pausable := obj.(framework.Pausable)
	switch {
	case paused && pausable:
		patch["spec"] = map[string]any{"paused": true}
	case paused:
		patch["metadata"] = map[string]any{"annotations": map[string]any{framework.PausedAnnotation: "true"}}
	default:
		patch["metadata"] = map[string]any{"annotations": map[string]any{framework.PausedAnnotation: nil}}
		if pausable {
			patch["spec"] = map[string]any{"paused": nil}
		}
	}
	if err := c.mergePatch(ctx, obj, patch); err != nil {
		return err
	}
	verb := map[bool]string{true: "paused", false: "resumed"}[paused]
	want := map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[paused]
	cond, err := c.waitFor(ctx, gvk, obj, func(o framework.Object) bool {
		p := meta.FindStatusCondition(o.StatusCore().Conditions, framework.ConditionPaused)
		return p != nil && p.Status == want && p.ObservedGeneration == o.GetGeneration() ||
			p == nil && !paused
	})
	if err != nil {
		fmt.Fprintf(c.Out, "%s %s; the controller has not confirmed it within %s: %v\n", kindName(gvk, name), verb, c.Wait, err)
		return nil
	}
	msg := "no Paused condition"
	if p := meta.FindStatusCondition(cond.StatusCore().Conditions, framework.ConditionPaused); p != nil {
		msg = fmt.Sprintf("Paused=%s", p.Status)
		if p.Message != "" {
			msg += ": " + oneLine(p.Message)
		}
	}
	fmt.Fprintf(c.Out, "%s %s (%s)\n", kindName(gvk, name), verb, msg)
	return nil
}

// Rescue asks the framework to retry, skip or abort the object's failed
// flow step (the steward.dev/operation-rescue annotation), then waits, up
// to Wait, for the controller to take the annotation and reports the flow.
func (c *CLI) Rescue(ctx context.Context, namespace, verb, typ, name string) error {
	r, err := commonv1.ParseRescue(verb)
	if err != nil {
		return err
	}
	gvk, obj, err := c.get(ctx, namespace, typ, name)
	if err != nil {
		return err
	}
	op := obj.StatusCore().Operation
	switch {
	case op == nil:
		return fmt.Errorf("%s has run no flow: there is nothing to rescue", kindName(gvk, name))
	case op.Phase == commonv1.PhaseSucceeded || op.Phase == commonv1.PhaseAborted:
		return fmt.Errorf("%s's flow %s is %s: there is nothing to rescue", kindName(gvk, name), op.Name, op.Phase)
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{commonv1.RescueAnnotation: string(r)}}}
	if err := c.mergePatch(ctx, obj, patch); err != nil {
		return err
	}
	after, err := c.waitFor(ctx, gvk, obj, func(o framework.Object) bool {
		_, pending := o.GetAnnotations()[commonv1.RescueAnnotation]
		return !pending
	})
	if err != nil {
		fmt.Fprintf(c.Out, "%s: asked to %s the flow %s at step %s; the controller has not taken it within %s: %v\n",
			kindName(gvk, name), r, op.Name, op.Step, c.Wait, err)
		return nil
	}
	fmt.Fprintf(c.Out, "%s: %s of the flow %s at step %s taken; the flow is now %s\n",
		kindName(gvk, name), r, op.Name, op.Step, operationSummary(after.StatusCore().Operation))
	return nil
}

// mergePatch sends a JSON merge patch of obj.
func (c *CLI) mergePatch(ctx context.Context, obj framework.Object, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b)); err != nil {
		return fmt.Errorf("patch %s: %w", obj.GetName(), err)
	}
	return nil
}

// waitFor polls obj, every half second for up to Wait, until done holds.
func (c *CLI) waitFor(ctx context.Context, gvk schema.GroupVersionKind, obj framework.Object, done func(framework.Object) bool) (framework.Object, error) {
	latest, _ := newObject(c.scheme, gvk)
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, c.Wait, true, func(ctx context.Context) (bool, error) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return false, err
		}
		return done(latest), nil
	})
	return latest, err
}
