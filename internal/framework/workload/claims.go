package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkDeparted sets label (value "true") on the claims whose ordinal
// departed reports, and removes it from the others; claims already right
// are not written. A departed member's volume holds data that stopped at
// its departure: a system that bootstraps a set again must not start such
// a member as a voter, which could elect a leader without the newest
// writes; it joins through a scale-out instead, syncing first.
func MarkDeparted(ctx context.Context, c client.Client, claims map[int]*corev1.PersistentVolumeClaim,
	label string, departed func(ordinal int) bool) error {
	for _, ordinal := range slices.Sorted(maps.Keys(claims)) {
		pvc := claims[ordinal]
		want := departed(ordinal)
		if _, marked := pvc.Labels[label]; marked == want {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		if want {
			metav1.SetMetaDataLabel(&pvc.ObjectMeta, label, "true")
		} else {
			delete(pvc.Labels, label)
		}
		err := c.Patch(ctx, pvc, patch)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("label volume claim %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// IsDeparted reports whether the claim carries the departed label.
func IsDeparted(pvc *corev1.PersistentVolumeClaim, label string) bool {
	_, ok := pvc.Labels[label]
	return ok
}

// DeleteClaims deletes the claims whose ordinal match reports, each with
// its UID as precondition (a claim re-created under the same name since it
// was listed is left alone), and returns the names it deleted. A claim
// already gone is skipped.
func DeleteClaims(ctx context.Context, c client.Client, claims map[int]*corev1.PersistentVolumeClaim,
	match func(ordinal int) bool) ([]string, error) {
	var deleted []string
	for _, ordinal := range slices.Sorted(maps.Keys(claims)) {
		pvc := claims[ordinal]
		if !match(ordinal) {
			continue
		}
		err := c.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return deleted, fmt.Errorf("delete volume claim %s: %w", pvc.Name, err)
		}
		deleted = append(deleted, pvc.Name)
	}
	return deleted, nil
}
