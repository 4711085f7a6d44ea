package workload

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ReadySince returns when the pod last became ready; false when it is not
// ready or does not say.
func ReadySince(pod *corev1.Pod) (time.Time, bool) {
	c := readyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// UnreadyFor returns how long the pod has been unready at now; zero when it
// is ready or does not say.
func UnreadyFor(pod *corev1.Pod, now time.Time) time.Duration {
	c := readyCondition(pod)
	if c == nil || c.Status == corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return 0
	}
	return now.Sub(c.LastTransitionTime.Time)
}

// UnreadySince returns when the pod stopped being ready: when its Ready
// condition turned false, or when it was created if it has none (not
// scheduled yet). Zero for a ready pod.
func UnreadySince(pod *corev1.Pod) time.Time {
	c := readyCondition(pod)
	switch {
	case c != nil && c.Status == corev1.ConditionTrue:
		return time.Time{}
	case c != nil && !c.LastTransitionTime.IsZero():
		return c.LastTransitionTime.Time
	}
	return pod.CreationTimestamp.Time
}

// NotReadyDetail says what a pod that is not ready waits for, for
// condition messages: "Pending: 0/3 nodes are available: 3 Insufficient
// cpu", "container gpss is CrashLoopBackOff (it exited with code 1)",
// "container gpss is ImagePullBackOff (Back-off pulling image ...)";
// empty when the pod says nothing more than that it is not ready.
func NotReadyDetail(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "Pending: " + cmp.Or(c.Message, c.Reason, "not scheduled")
		}
	}
	for _, st := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			detail := fmt.Sprintf("container %s is %s", st.Name, w.Reason)
			// A crash loop's message names its growing back-off, and its
			// restart count grows: either would change a condition
			// message at every crash. How it ended stays while the cause
			// does.
			switch last := st.LastTerminationState.Terminated; {
			case w.Reason == "CrashLoopBackOff" && last != nil && last.Reason == "OOMKilled":
				detail += " (it was OOMKilled)"
			case w.Reason == "CrashLoopBackOff" && last != nil:
				detail += fmt.Sprintf(" (it exited with code %d)", last.ExitCode)
			case w.Message != "" && w.Reason != "CrashLoopBackOff":
				detail += " (" + w.Message + ")"
			}
			return detail
		}
	}
	for _, gate := range pod.Spec.ReadinessGates {
		c := podCondition(pod, gate.ConditionType)
		switch {
		case c == nil:
			return fmt.Sprintf("readiness gate %s not evaluated yet", gate.ConditionType)
		case c.Status != corev1.ConditionTrue:
			return fmt.Sprintf("%s: %s", gate.ConditionType, cmp.Or(c.Message, c.Reason, string(c.Status)))
		}
	}
	return ""
}

// LastExit says how the container named container last ended, when that
// was a failure: "container zookeeper last exited with code 3",
// "container zookeeper was last OOMKilled"; empty when it never ended, or
// ended with code 0. Unlike the container's state, which goes between
// CrashLoopBackOff and Running at every crash, it stays the same through
// a crash loop, so a condition message that carries it is written once.
func LastExit(pod *corev1.Pod, container string) string {
	for _, st := range pod.Status.ContainerStatuses {
		last := st.LastTerminationState.Terminated
		switch {
		case st.Name != container || last == nil:
		case last.Reason == "OOMKilled":
			return fmt.Sprintf("container %s was last OOMKilled", container)
		case last.ExitCode != 0:
			return fmt.Sprintf("container %s last exited with code %d", container, last.ExitCode)
		}
	}
	return ""
}

// NotReadyMessage is "<pod> is not ready", followed by NotReadyDetail when
// the pod says more.
func NotReadyMessage(pod *corev1.Pod) string {
	if d := NotReadyDetail(pod); d != "" {
		return pod.Name + " is not ready: " + d
	}
	return pod.Name + " is not ready"
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition { return podCondition(pod, corev1.PodReady) }

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// SetPodCondition sets the condition c.Type of pod in the API server (a
// strategic merge patch of status.conditions, which merges by type: the
// kubelet's conditions stay), when its status, reason or message differ
// from what pod says; it reports whether it wrote. The transition time
// moves only with the status. For readiness gates: the kubelet makes the
// pod Ready only while every gate's condition is True.
func SetPodCondition(ctx context.Context, c client.Client, pod *corev1.Pod, cond corev1.PodCondition) (bool, error) {
	old := podCondition(pod, cond.Type)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return false, nil
	}
	cond.LastTransitionTime = metav1.Now()
	if old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	base := pod.DeepCopy()
	if old != nil {
		*old = cond
	} else {
		pod.Status.Conditions = append(pod.Status.Conditions, cond)
	}
	if err := c.Status().Patch(ctx, pod, client.StrategicMergeFrom(base)); err != nil {
		return false, fmt.Errorf("set condition %s of pod %s: %w", cond.Type, pod.Name, err)
	}
	return true, nil
}

// Evict evicts the pod through the Eviction API, with its UID as
// precondition, so that its PodDisruptionBudget applies: a concurrent node
// drain and a rolling restart together never take more pods than the
// budget allows. It reports false, without error, when the budget allows no
// disruption now (429); a pod already gone, or replaced, counts as
// evicted.
func Evict(ctx context.Context, c client.Client, pod *corev1.Pod) (bool, error) {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := c.SubResource("eviction").Create(ctx, pod, eviction)
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return true, nil
	case apierrors.IsTooManyRequests(err):
		return false, nil
	}
	return false, fmt.Errorf("evict pod %s: %w", pod.Name, err)
}
