package workload

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Set is a StatefulSet-shaped set of pods: pods named <Name>-<ordinal>,
// each with a volume claim <Volume>-<Name>-<ordinal> from the claim
// template Volume, all of them carrying the Selector labels.
type Set struct {
	// Namespace and Name are the StatefulSet's.
	Namespace, Name string
	// Selector selects the set's pods and claims (the standard selector of
	// the set's component).
	Selector map[string]string
	// Volume is the name of the volume claim template.
	Volume string
}

// PodName returns the name of the pod with ordinal.
func (s Set) PodName(ordinal int) string { return fmt.Sprintf("%s-%d", s.Name, ordinal) }

// ClaimName returns the name of the volume claim of the pod with ordinal.
func (s Set) ClaimName(ordinal int) string { return fmt.Sprintf("%s-%s-%d", s.Volume, s.Name, ordinal) }

// PodOrdinal returns the ordinal of a pod of the set.
func (s Set) PodOrdinal(pod *corev1.Pod) (int, bool) { return Ordinal(pod.Name, s.Name+"-") }

// ClaimOrdinal returns the ordinal of the pod a claim of the set belongs to.
func (s Set) ClaimOrdinal(pvc *corev1.PersistentVolumeClaim) (int, bool) {
	return Ordinal(pvc.Name, s.Volume+"-"+s.Name+"-")
}

// Pods lists the set's pods by ordinal, terminating ones included (a
// caller decides what a terminating pod means to it).
func (s Set) Pods(ctx context.Context, r client.Reader) (map[int]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Selector)); err != nil {
		return nil, fmt.Errorf("list the pods of %s: %w", s.Name, err)
	}
	pods := map[int]*corev1.Pod{}
	for i := range list.Items {
		if ordinal, ok := s.PodOrdinal(&list.Items[i]); ok {
			pods[ordinal] = &list.Items[i]
		}
	}
	return pods, nil
}

// Claims lists the set's volume claims by ordinal, those being deleted left
// out.
func (s Set) Claims(ctx context.Context, r client.Reader) (map[int]*corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Selector)); err != nil {
		return nil, fmt.Errorf("list the volume claims of %s: %w", s.Name, err)
	}
	claims := map[int]*corev1.PersistentVolumeClaim{}
	for i := range list.Items {
		pvc := &list.Items[i]
		if ordinal, ok := s.ClaimOrdinal(pvc); ok && pvc.DeletionTimestamp == nil {
			claims[ordinal] = pvc
		}
	}
	return claims, nil
}

// Ordinal returns the ordinal of name, prefix followed by a decimal number
// written without sign or leading zeros.
func Ordinal(name, prefix string) (int, bool) {
	suffix, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n < 0 || strconv.Itoa(n) != suffix {
		return 0, false
	}
	return n, true
}

// RevisionKnown reports whether a StatefulSet's controller has seen its
// latest pod template, so that status.updateRevision names it: until then
// no pod can be told stale, and a set must not call itself up to date.
func RevisionKnown(sts *appsv1.StatefulSet) bool {
	return sts != nil && sts.Status.ObservedGeneration >= sts.Generation && sts.Status.UpdateRevision != ""
}

// Replicas is the size of a StatefulSet whose scale-in is a task flow: the
// spec's size (want), never below what the operation holds the set at
// (commonv1.Operation.Held), and without a hold never below the live set's
// current size, which only a flow's step releases. live is nil before the
// set exists.
func Replicas(want int32, live *appsv1.StatefulSet, op *commonv1.Operation) int32 {
	if live == nil {
		return want
	}
	if held, ok := op.HeldReplicas(live.Name); ok {
		return max(held, want)
	}
	if live.Spec.Replicas != nil {
		return max(*live.Spec.Replicas, want)
	}
	return want
}
