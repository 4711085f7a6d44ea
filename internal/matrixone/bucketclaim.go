package matrixone

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/s3"
)

// The BucketClaim controller's RBAC, on top of the system's: it deletes a
// Released claim under reclaimPolicy Delete, and reads the credentials and
// CA Secrets (get) and the pods that mount a claim (list).
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=bucketclaims,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=bucketclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=bucketclaims/finalizers,verbs=update

// Defaults of the claims' Options.
const (
	// DefaultClaimDeleteBatches is how many bulk deletes (of up to
	// s3.DefaultBatchSize objects each) one pass sends when a claim's
	// prefix is emptied: status records the progress between passes.
	DefaultClaimDeleteBatches = 5
	// claimS3Timeout bounds the store's requests of one pass.
	claimS3Timeout = 30 * time.Second
	// maxLastError bounds status.deletion.lastError (its schema's limit).
	maxLastError = 4096
)

// BucketClaim is the kind the bucket claims' controller reconciles.
type BucketClaim = mov1.BucketClaim

// ClaimContext is the framework's pass context of a BucketClaim.
type ClaimContext = framework.Context[*BucketClaim]

// BucketClaimController is the BucketClaim actor. Declare makes the
// bucket and observes the claim's LogSets, pods and overlaps into its
// phase and conditions; Observe binds it to the first LogSet that names
// it, or deletes it once Released under reclaimPolicy Delete; Finalize
// waits for its LogSet and pods to go and, under Delete, empties its
// prefix.
//
// Emptying is a level-based loop in Finalize, not a task flow: what is
// left to do is what a listing of the prefix finds (s3.Client.DeletePrefix
// lists from the prefix's start each batch, so whatever stopped a pass, an
// operator restart included, the next picks up what is left), and the
// gates before it (the LogSet gone, no pod left) are read again on every
// pass. A flow would persist a step that the store already tells, and
// could be rescued past a gate. What status.deletion records is progress
// for the user (objects and bytes deleted, the last error), persisted by
// every pass's status write; a pass cut short by a restart may have
// deleted a batch it did not count. One path empties the prefix, whoever
// deleted the claim: a Released claim under Delete is deleted by the
// controller (Observe), and emptied by its finalizer, so that no LogSet
// can bind it meanwhile.
type BucketClaimController struct {
	opts    Options
	clients *s3Clients
}

// NewBucketClaimController returns a BucketClaim controller with opts.
func NewBucketClaimController(opts Options) *BucketClaimController {
	return &BucketClaimController{opts: opts.withDefaults(), clients: newS3Clients()}
}

func setupBucketClaims(mgr ctrl.Manager, c *BucketClaimController) error {
	_, err := framework.Setup(mgr, framework.Options[*BucketClaim, *claimState]{
		Actor:          c,
		App:            build.App,
		PartOf:         build.PartOf,
		Resync:         c.opts.Resync,
		ResyncNotReady: c.opts.ResyncNotReady,
		Customize: func(b *builder.Builder) *builder.Builder {
			labeled := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[build.LabelBucketClaim] != "" })
			return b.
				Watches(&mov1.LogSet{}, handler.EnqueueRequestsFromMapFunc(claimOfLogSet)).
				Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(claimOfPod), builder.WithPredicates(labeled))
		},
	})
	return err
}

// claimOfLogSet enqueues the claim a LogSet names, when it names one.
func claimOfLogSet(_ context.Context, o client.Object) []reconcile.Request {
	l, ok := o.(*mov1.LogSet)
	if !ok || l.Spec.SharedStorage.BucketClaim == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l.Namespace, Name: l.Spec.SharedStorage.BucketClaim}}}
}

// claimOfPod enqueues the claim a pod mounts.
func claimOfPod(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[build.LabelBucketClaim]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// logSetsOfClaim returns the map of a claim to the LogSets that name it,
// for the LogSet controller's watch: a claim bound (or taken) moves them.
func logSetsOfClaim(r client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list mov1.LogSetList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if l := &list.Items[i]; l.Spec.SharedStorage.BucketClaim == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(l)})
			}
		}
		return out
	}
}

// Default applies the API's defaults (mov1.DefaultBucketClaim); the
// defaulting webhook calls it too.
func (*BucketClaimController) Default(b *BucketClaim) { mov1.DefaultBucketClaim(b) }

// Validate checks spec.s3 as a LogSet's is checked (validateS3): the
// endpoint, the bucket's name, the credentials and CA Secrets' names.
func (*BucketClaimController) Validate(b *BucketClaim) error {
	return validateS3(field.NewPath("spec", "s3"), &b.Spec.S3).ToAggregate()
}

// overlapMessage says that a claim's location overlaps other's.
func overlapMessage(other *BucketClaim) string {
	loc := claimLocation(other.Spec.S3)
	return fmt.Sprintf("overlaps the BucketClaim %s/%s (%s): two claims never share a key; choose a prefix that neither contains nor lies within it, or another bucket",
		other.Namespace, other.Name, loc)
}

// claimLocation is a claim's location without credentials: what Overlaps
// compares.
func claimLocation(s mov1.S3Storage) s3.Location {
	return s3.Location{Endpoint: s.Endpoint, Region: s.Region, Bucket: s.Bucket, KeyPrefix: s.KeyPrefix, PathStyle: s.PathStyle}
}

// claimOlder reports whether a was created before b: by creation time,
// then by namespace/name; a claim not created yet is the newest.
func claimOlder(a, b *BucketClaim) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	switch {
	case tb.IsZero() != ta.IsZero():
		return tb.IsZero()
	case !ta.Equal(&tb):
		return ta.Before(&tb)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// claimYields reports whether b gives way to other, of two claims whose
// locations overlap: a claim that has been bound keeps its location over
// one never bound (its LogSet's data is there), and otherwise the older
// keeps it.
func claimYields(b, other *BucketClaim) bool {
	if bb, ob := b.Status.BoundTo != nil, other.Status.BoundTo != nil; bb != ob {
		return !bb
	}
	return claimOlder(other, b)
}

// overlappingClaim returns a claim, in any namespace, whose location
// overlaps b's and for which refuse holds; the oldest of them, nil when
// none. Claims being deleted count: their objects may still be deleted.
func overlappingClaim(ctx context.Context, r client.Reader, b *BucketClaim, refuse func(*BucketClaim) bool) (*BucketClaim, error) {
	var list mov1.BucketClaimList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list BucketClaims: %w", err)
	}
	slices.SortFunc(list.Items, func(x, y BucketClaim) int {
		if claimOlder(&x, &y) {
			return -1
		}
		return 1
	})
	mine := claimLocation(b.Spec.S3)
	for i := range list.Items {
		other := &list.Items[i]
		if other.Namespace == b.Namespace && other.Name == b.Name {
			continue
		}
		if s3.Overlaps(mine, claimLocation(other.Spec.S3)) && refuse(other) {
			return other, nil
		}
	}
	return nil, nil
}

// claimState is what a pass observed of a claim.
type claimState struct {
	// conflict is the claim this one yields to (claimYields); nil when
	// none overlaps it.
	conflict *BucketClaim
	// bucketReason and bucketWhy say why the bucket has not answered;
	// empty when it has.
	bucketReason, bucketWhy string
	// bound is the LogSet status.boundTo names, when it still exists
	// (same UID, read from the API server); nil otherwise.
	bound *mov1.LogSet
	// candidate is the oldest LogSet that names the claim, not being
	// deleted, and not bound (nil when bound is set, or none does).
	candidate *mov1.LogSet
	// pods are the pods that mount the claim (build.LabelBucketClaim),
	// running or about to.
	pods []string
}

// Declare runs on every pass: it looks for an older claim the location
// overlaps (the claim then stays in Conflict, and nothing else is done),
// makes the bucket unless it exists, with the credentials Secret's keys,
// reads the LogSet the claim is bound to from the API server (its
// absence releases the claim, and must not be a cache's lag), the LogSets
// that name the claim and the pods that mount it, and sets the phase and
// conditions from what it found.
func (c *BucketClaimController) Declare(ctx *ClaimContext) (*claimState, error) {
	b := ctx.Obj
	st := &claimState{}
	other, err := overlappingClaim(ctx, ctx.Client, b, func(other *BucketClaim) bool { return claimYields(b, other) })
	if err != nil {
		return nil, err
	}
	st.conflict = other
	if st.conflict == nil {
		if err := c.ensureBucket(ctx, st); err != nil {
			return nil, err
		}
	}
	if st.bound, err = boundLogSet(ctx, b); err != nil {
		return nil, err
	}
	if st.bound == nil {
		var list mov1.LogSetList
		if err := ctx.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
			return nil, fmt.Errorf("list LogSets: %w", err)
		}
		for i := range list.Items {
			l := &list.Items[i]
			if l.Spec.SharedStorage.BucketClaim != b.Name || !l.DeletionTimestamp.IsZero() {
				continue
			}
			if st.candidate == nil || framework.Older(l, st.candidate) {
				st.candidate = l
			}
		}
	}
	if st.pods, err = claimPods(ctx, ctx.Client, b); err != nil {
		return nil, err
	}
	st.setStatus(ctx)
	return st, nil
}

// ensureBucket makes the claim's bucket unless it exists, and records in
// st why it could not.
func (c *BucketClaimController) ensureBucket(ctx *ClaimContext, st *claimState) error {
	cl, why, err := c.client(ctx)
	if err != nil {
		return err
	}
	if why != "" {
		st.bucketReason, st.bucketWhy = mov1.ReasonCredentialsMissing, why
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, claimS3Timeout)
	defer cancel()
	created, err := cl.EnsureBucket(sctx)
	if err != nil {
		st.bucketReason, st.bucketWhy = mov1.ReasonBucketUnreachable, err.Error()
		return nil
	}
	if created {
		loc := cl.Location()
		ctx.Log.Info("Created the bucket", "bucket", loc.Bucket, "endpoint", loc.Endpoint)
		ctx.Event(corev1.EventTypeNormal, mov1.EventBucketCreated, "Created the bucket %s at %s", loc.Bucket, loc.Endpoint)
	}
	return nil
}

// boundLogSet returns the LogSet b is bound to, read from the API server,
// nil when it is gone (or b was never bound).
func boundLogSet(ctx *ClaimContext, b *BucketClaim) (*mov1.LogSet, error) {
	bt := b.Status.BoundTo
	if bt == nil {
		return nil, nil
	}
	l := &mov1.LogSet{}
	switch err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: bt.Name}, l); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get the LogSet %s: %w", bt.Name, err)
	case l.UID != bt.UID:
		return nil, nil
	}
	return l, nil
}

// claimPods returns the names of the pods of b's namespace that mount it
// (build.LabelBucketClaim) and may still write: every pod but those whose
// containers have all ended (Succeeded, Failed).
func claimPods(ctx context.Context, r client.Reader, b *BucketClaim) ([]string, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(b.Namespace), client.MatchingLabels{build.LabelBucketClaim: b.Name}); err != nil {
		return nil, fmt.Errorf("list the pods that mount the claim: %w", err)
	}
	var names []string
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Observe binds the claim to the oldest LogSet that names it, once its
// bucket answers, unless it is in Conflict or was released under Delete
// (a Retain claim released by its LogSet is bound again, by a new LogSet
// that names it: rebinding); and deletes a claim released under Delete
// once no pod mounts it (Finalize then empties its prefix).
func (c *BucketClaimController) Observe(ctx *ClaimContext, st *claimState) (framework.Action[*BucketClaim], error) {
	b := ctx.Obj
	switch {
	case st == nil:
	case st.released(b) && b.Spec.ReclaimPolicy == commonv1.ReclaimDelete:
		if len(st.pods) == 0 {
			return framework.Named("DeleteReleased", func(ctx *ClaimContext) error { return c.deleteReleased(ctx) }), nil
		}
	case st.bindable(b):
		return framework.Named("Bind", func(ctx *ClaimContext) error { return c.bind(ctx, st) }), nil
	}
	return nil, nil
}

// released reports whether the claim's LogSet is gone.
func (st *claimState) released(b *BucketClaim) bool {
	return st.conflict == nil && st.bound == nil && b.Status.BoundTo != nil
}

// bindable reports whether Observe may bind the claim to st.candidate.
func (st *claimState) bindable(b *BucketClaim) bool {
	return st.conflict == nil && st.bound == nil && st.candidate != nil && st.bucketWhy == "" &&
		(b.Status.BoundTo == nil || b.Spec.ReclaimPolicy != commonv1.ReclaimDelete)
}

// bind binds the claim to st.candidate. Before, it looks for an
// overlapping claim again, on the API server: a claim created a moment ago
// may not be in the cache yet, and a bound claim keeps its location.
func (c *BucketClaimController) bind(ctx *ClaimContext, st *claimState) error {
	b := ctx.Obj
	other, err := overlappingClaim(ctx, ctx.Reader, b, func(other *BucketClaim) bool { return claimYields(b, other) })
	if err != nil || other != nil {
		return err // the next pass sets Conflict
	}
	l := st.candidate
	b.Status.BoundTo = &mov1.BucketClaimBinding{Name: l.Name, UID: l.UID}
	b.Status.Deletion = nil
	st.bound, st.candidate = l, nil
	st.setStatus(ctx)
	ctx.Log.Info("Bound the claim", "logset", l.Name, "uid", l.UID)
	return nil
}

// deleteReleased deletes a claim released under reclaimPolicy Delete once
// no pod mounts it (read from the API server: the cache may not have seen
// a pod start); its finalizer empties the prefix.
func (c *BucketClaimController) deleteReleased(ctx *ClaimContext) error {
	b := ctx.Obj
	pods, err := claimPods(ctx, ctx.Reader, b)
	if err != nil || len(pods) > 0 {
		return err
	}
	err = ctx.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete the released claim: %w", err)
	}
	ctx.Log.Info("Deleted the released claim (reclaimPolicy Delete)", "logset", b.Status.BoundTo.Name)
	ctx.Event(corev1.EventTypeNormal, mov1.EventReleasedClaimDeleted,
		"Deleting the claim released by the LogSet %s (reclaimPolicy Delete): the objects under %s go first",
		b.Status.BoundTo.Name, claimLocation(b.Spec.S3))
	return nil
}

// Finalize runs when the claim is deleted, by a user or, once Released
// under Delete, by Observe. It waits while a LogSet is bound to it
// (DeletionBlocked). It keeps the objects (ObjectsKept) under Retain, of a
// claim never bound (nothing there is of its LogSet's), and of one that
// yields to an overlapping claim (they are that claim's). Otherwise
// (Delete) it waits until no pod mounts the claim, then deletes the
// objects under its prefix, a few batches per pass (emptyPrefix).
func (c *BucketClaimController) Finalize(ctx *ClaimContext) (bool, error) {
	b := ctx.Obj
	b.Status.Phase = mov1.BucketClaimDeleting
	l, err := boundLogSet(ctx, b)
	if err != nil {
		return false, err
	}
	if l != nil {
		ctx.SetReady(false, mov1.ReasonDeletionBlocked, fmt.Sprintf(
			"the LogSet %s is bound to the claim: the claim is deleted once the LogSet is gone", l.Name))
		return false, nil
	}
	other, err := overlappingClaim(ctx, ctx.Reader, b, func(other *BucketClaim) bool { return claimYields(b, other) })
	if err != nil {
		return false, err
	}
	keep := ""
	switch {
	case other != nil:
		keep = fmt.Sprintf("the location overlaps the BucketClaim %s/%s's, whose objects they are", other.Namespace, other.Name)
	case b.Spec.ReclaimPolicy != commonv1.ReclaimDelete:
		keep = "reclaimPolicy Retain"
	case b.Status.BoundTo == nil:
		keep = "the claim was never bound, so nothing there is of its LogSet's"
	}
	if keep != "" {
		ctx.Event(corev1.EventTypeNormal, mov1.EventObjectsKept, "Kept the objects under %s: %s", claimLocation(b.Spec.S3), keep)
		c.clients.forget(b.UID)
		return true, nil
	}
	pods, err := claimPods(ctx, ctx.Reader, b)
	if err != nil {
		return false, err
	}
	if len(pods) > 0 {
		ctx.SetReady(false, mov1.ReasonWaitingForPods, waitingForPods(pods))
		return false, nil
	}
	return c.emptyPrefix(ctx)
}

// waitingForPods says that the objects wait for pods to go.
func waitingForPods(pods []string) string {
	return fmt.Sprintf("%d pods that mount the claim remain, first %s: its objects are deleted once they are gone", len(pods), pods[0])
}

// emptyPrefix deletes up to Options.ClaimDeleteBatches batches of the
// objects under the claim's prefix, records the progress in
// status.deletion, and reports whether nothing is left. A failure is
// recorded (lastError, and Ready's message) and retried by the next pass,
// with the framework's backoff; a missing credentials Secret too, and the
// message says how to let the claim go without its objects.
func (c *BucketClaimController) emptyPrefix(ctx *ClaimContext) (bool, error) {
	b := ctx.Obj
	where := claimLocation(b.Spec.S3).String()
	d := b.Status.Deletion
	if d == nil {
		d = &mov1.BucketClaimDeletion{}
		b.Status.Deletion = d
	}
	failed := func(why string) (bool, error) {
		why = framework.Shorten(why, maxLastError)
		d.LastError = why
		ctx.SetReady(false, mov1.ReasonEmptying, fmt.Sprintf(
			"%d objects deleted under %s; the last pass failed: %s (set reclaimPolicy Retain to let the claim go with the objects left)",
			d.ObjectsDeleted, where, why))
		return false, nil
	}
	cl, why, err := c.client(ctx)
	if err != nil {
		return false, err
	}
	if why != "" {
		return failed(why)
	}
	if d.StartedAt == nil {
		d.StartedAt = ptrTime(time.Now())
		ctx.Log.Info("Emptying the claim's prefix", "location", where)
		ctx.Event(corev1.EventTypeNormal, mov1.EventEmptyingPrefix, "Deleting every object under %s (reclaimPolicy Delete)", where)
	}
	res, err := deletePass(ctx, cl, c.opts)
	d.ObjectsDeleted += res.Objects
	d.BytesDeleted += res.Bytes
	if err != nil {
		return failed(err.Error())
	}
	d.LastError = ""
	if !res.Done {
		ctx.SetReady(false, mov1.ReasonEmptying, fmt.Sprintf("%d objects deleted under %s so far", d.ObjectsDeleted, where))
		return false, nil
	}
	d.CompletedAt = ptrTime(time.Now())
	ctx.Log.Info("Emptied the claim's prefix", "location", where, "objects", d.ObjectsDeleted, "bytes", d.BytesDeleted)
	ctx.Event(corev1.EventTypeNormal, mov1.EventPrefixEmptied, "Deleted %d objects (%d bytes) under %s: none is left",
		d.ObjectsDeleted, d.BytesDeleted, where)
	c.clients.forget(b.UID)
	return true, nil
}

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }

// client returns an S3 client of the claim's location, or why it cannot
// be made (s3Clients.forLocation).
func (c *BucketClaimController) client(ctx *ClaimContext) (*s3.Client, string, error) {
	b := ctx.Obj
	return c.clients.forLocation(ctx, ctx.Reader, b.Namespace, b.UID, b.Spec.S3)
}
