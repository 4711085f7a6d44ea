package matrixone

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// LogSet is the kind the log service's controller reconciles.
type LogSet = mov1.LogSet

// LogContext is the framework's pass context of a LogSet.
type LogContext = framework.Context[*LogSet]

// LogSetController is the LogSet actor: Declare applies the stores and
// observes HAKeeper, Observe starts the flows that replace a failed store,
// remove stores beyond spec.replicas and restart stale stores, one store
// at a time, Finalize applies the volumes' reclaim policy.
type LogSetController struct {
	opts    Options
	views   *viewReader
	trigger *framework.Trigger
	// clients reach the shared storage and the backup of a restore.
	clients *s3Clients
}

// NewLogSetController returns a LogSet controller with opts.
func NewLogSetController(opts Options) *LogSetController {
	opts = opts.withDefaults()
	return &LogSetController{opts: opts, trigger: framework.NewTrigger(), views: opts.sharedViews(), clients: newS3Clients()}
}

func setupLogSets(mgr ctrl.Manager, c *LogSetController) error {
	_, err := framework.Setup(mgr, framework.Options[*LogSet, *logState]{
		Actor:             c,
		Flows:             []framework.Flow[*LogSet, *logState]{c.replaceStoreFlow(), c.removeStoreFlow(), c.logRollingRestartFlow(), c.restoreFlow()},
		App:               build.App,
		PartOf:            build.PartOf,
		Owns:              []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}},
		Resync:            c.opts.Resync,
		ResyncNotReady:    c.opts.ResyncNotReady,
		ResyncNotReadyMax: framework.LongNotReadyResyncs * c.opts.Resync, // a set whose log stores stay unreachable
		Trigger:           c.trigger,
		Customize: func(b *builder.Builder) *builder.Builder {
			return b.Watches(&corev1.Pod{}, workload.EnqueueOwnerByLabels(build.App, build.ComponentLog)).
				// A claim bound (or taken) moves the LogSets that name it.
				Watches(&mov1.BucketClaim{}, handler.EnqueueRequestsFromMapFunc(logSetsOfClaim(mgr.GetClient())))
		},
	})
	return err
}

// Default applies the API's defaults (mov1.DefaultLogSet); the defaulting
// webhook calls it too.
func (*LogSetController) Default(l *LogSet) { mov1.DefaultLogSet(l) }

// Validate checks what the CRD's schema cannot: the image reference, the
// shared storage (validateSharedStorage), storeFailureTimeout not
// negative, rootPassword a Secret's name, spec.config (TOML that sets no key the operator owns, each refused with
// its reason), the resources, and replicas not below shardReplicas (also
// a CEL rule; kept here for objects the schema never saw).
func (*LogSetController) Validate(l *LogSet) error {
	spec := field.NewPath("spec")
	errs := validatePodSet(spec, build.RoleLog, &l.Spec.PodSetSpec)
	errs = append(errs, validateSharedStorage(spec.Child("sharedStorage"), l.Spec.SharedStorage)...)
	errs = append(errs, standard.ValidateDuration(spec.Child("storeFailureTimeout"), l.Spec.StoreFailureTimeout)...)
	errs = append(errs, standard.ValidateObjectName(spec.Child("rootPassword"), l.Spec.RootPassword, "Secret")...)
	errs = append(errs, validateRestore(spec, l.Spec.RestoreFrom, l.Spec.SharedStorage, l.Spec.RootPassword)...)
	if l.Spec.ShardReplicas > l.Spec.Replicas {
		errs = append(errs, field.Invalid(spec.Child("replicas"), l.Spec.Replicas,
			fmt.Sprintf("must not be below shardReplicas (%d): each replica of a shard lives on its own store", l.Spec.ShardReplicas)))
	}
	return errs.ToAggregate()
}

// Declare runs on every pass: once the shared filesystem's claim exists
// (made here when the spec sizes it), or the BucketClaim the spec names is
// bound to this LogSet (resolveSharedStorage), and unless the set still
// restores (spec.restoreFrom: then it says so and applies nothing), it
// generates root's password Secret when the one spec.rootPassword names
// (or the default) does not exist, except for a restore, applies the headless
// Service, the configuration template and the
// StatefulSet, records HAKeeper's bootstrap and the service addresses,
// observes the stores and HAKeeper's view into status and sets the
// conditions. It returns what it found, for Observe; nil while it waits
// for the shared storage.
func (c *LogSetController) Declare(ctx *LogContext) (*logState, error) {
	l := ctx.Obj
	why, err := ensureSharedClaim(ctx)
	if err != nil {
		return nil, err
	}
	reason := mov1.ReasonWaitingForSharedStorage
	// rendered is l with a BucketClaim's location resolved, for the
	// configuration and the pods.
	rendered := l
	if why == "" {
		rendered, reason, why, err = resolveSharedStorage(ctx, ctx.Client, l)
		if err != nil {
			return nil, err
		}
	}
	if why != "" {
		setWaitingForStorage(ctx, reason, why)
		return nil, nil
	}
	if restoring(l) {
		return setRestoring(ctx, rendered)
	}
	// A restored catalog's root is the source's: its Secret is never
	// generated (a missing one keeps the pods from starting, and says so).
	if l.Spec.RestoreFrom == nil {
		newSecret := func(password string) *corev1.Secret { return build.RootPasswordSecret(l, password) }
		if err := framework.EnsurePasswordSecret(ctx, ctx.Client, ctx.Reader, ctx.Log, newSecret); err != nil {
			return nil, err
		}
	}
	for _, svc := range []*corev1.Service{build.LogHeadlessService(l), build.LogGossipService(l)} {
		if err := ctx.Apply(svc, build.ComponentLog); err != nil {
			return nil, err
		}
	}
	// Decided once: a recorded bootstrap wins over what the spec says now.
	if l.Status.Bootstrap == nil {
		b := build.LogBootstrap(l)
		l.Status.Bootstrap = &b
	}
	text, err := build.LogConfig(rendered, *l.Status.Bootstrap)
	if err != nil {
		return nil, framework.InvalidSpec(fmt.Errorf("spec.config: %w", err))
	}
	name, err := ctx.EnsureConfigMap(build.ComponentLogConfig, map[string]string{build.LogTemplateFile: text})
	if err != nil {
		return nil, err
	}
	l.Status.ConfigRevision = name
	stores, err := ensureStores(ctx)
	if err != nil {
		return nil, err
	}
	live := &appsv1.StatefulSet{}
	switch err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: l.Name}, live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("get StatefulSet %s: %w", l.Name, err)
	}
	sts := build.LogStatefulSet(rendered, name)
	// Stores leave only through the remove-store flow's hold.
	sts.Spec.Replicas = ptr.To(workload.Replicas(l.Spec.Replicas, live, ctx.Operation()))
	if err := ctx.Apply(sts, build.ComponentLog); err != nil {
		return nil, err
	}
	if _, err := ctx.CollectConfigMaps(build.ComponentLogConfig); err != nil {
		return nil, err
	}
	l.Status.ServiceAddresses = build.LogServiceAddresses(l)
	st, err := c.observe(ctx, sts, stores)
	if err != nil {
		return nil, err
	}
	// From now on a store on a new volume starts only once HAKeeper
	// confirms it is new (mo-agent's package identity).
	if st.viewOK && st.view.Running() && stores[build.BootstrappedKey] == "" {
		if err := recordStores(ctx, map[string]string{build.BootstrappedKey: "true"}); err != nil {
			return nil, err
		}
	}
	st.setStatus(l)
	st.replace = st.setConditions(ctx)
	return st, nil
}

// Observe starts the restore flow while the set restores, the
// replace-store flow for a failed store (st.replace, decided by Declare
// behind the majority guard), the remove-store flow for a store beyond
// spec.replicas (whose first step waits until it can leave:
// removalBlocked), and the
// rolling-restart flow when a store's pod runs an older revision of the
// pod template than the StatefulSet's latest.
func (c *LogSetController) Observe(ctx *LogContext, st *logState) (framework.Action[*LogSet], error) {
	if st == nil { // Declare waits for the shared storage
		return nil, nil
	}
	if st.shared != nil {
		return framework.StartFlow[*LogSet](flowRestore, "restoreFrom "+ctx.Obj.Spec.RestoreFrom.Backup), nil
	}
	if st.replace != nil {
		return st.startReplacement(*st.replace), nil
	}
	if ordinal, ok := st.toRemove(ctx.Obj); ok {
		// Its first step waits for the guard, checked every second.
		return st.startRemoval(ctx.Obj, ordinal), nil
	}
	if len(st.stale()) > 0 {
		return framework.StartFlow[*LogSet](flowRollingRestart, rollingRestartTrigger(st.sts)), nil
	}
	return nil, nil
}

// Finalize runs when the set is deleted. Owner references take the
// StatefulSet, Service and ConfigMaps away; the stores' volume claims
// follow spec.storage.reclaimPolicy: Retain (the default) keeps them, so
// that a set re-created under the same name finds its stores' data (the
// same identities and deployment id), and Delete deletes them. Root's
// password Secret, when Steward generated it, goes with them.
func (c *LogSetController) Finalize(ctx *LogContext) (bool, error) {
	l := ctx.Obj
	c.views.forget(groupOf(l), c.trigger, groupOf(l))
	if l.Spec.Storage.ReclaimPolicy != commonv1.ReclaimDelete {
		return true, nil
	}
	if err := framework.DeleteGeneratedSecret(ctx, ctx.Client, build.RootPasswordSecret(l, "")); err != nil {
		return false, err
	}
	if err := deleteStores(ctx); err != nil {
		return false, err
	}
	if err := deleteSharedClaim(ctx); err != nil {
		return false, err
	}
	return deleteClaims(ctx, logSet(l))
}

// logSet is the workload view of l's stores: their pods and volume claims.
func logSet(l *LogSet) workload.Set {
	return workload.Set{Namespace: l.Namespace, Name: l.Name, Selector: build.Selector(l.Name, build.ComponentLog), Volume: build.DataVolume}
}

func groupOf(obj client.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// ensureSharedClaim makes the shared filesystem claim when the spec sizes it
// and no claim has its name (a user's claim of that name is used as it
// is); otherwise it says why the set waits for the user's claim, if it
// does.
func ensureSharedClaim(ctx *LogContext) (string, error) {
	l := ctx.Obj
	if b := build.SharedBucketClaim(l); b != nil {
		return ensureSharedBucketClaim(ctx, b)
	}
	claim := build.SharedClaim(l)
	if claim == nil {
		return sharedStorageMissing(ctx, ctx.Reader, l.Namespace, l.Spec.SharedStorage)
	}
	created, err := framework.CreateIfAbsent(ctx, ctx.Client, ctx.Reader, client.ObjectKeyFromObject(claim),
		&corev1.PersistentVolumeClaim{}, func() client.Object { return claim })
	if err != nil {
		return "", fmt.Errorf("ensure the shared filesystem claim %s: %w", claim.Name, err)
	}
	if created {
		ctx.Log.Info("Created the shared filesystem claim", "claim", claim.Name, "size", claim.Spec.Resources.Requests.Storage())
		ctx.Event(corev1.EventTypeNormal, mov1.EventSharedClaimCreated, "Created the shared filesystem claim %s (%s)",
			claim.Name, claim.Spec.Resources.Requests.Storage())
	}
	return "", nil
}

// The LogSet controller's RBAC on top of the system's: it makes the
// BucketClaim of its template.
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=bucketclaims,verbs=create

// ensureSharedBucketClaim makes the BucketClaim of the set's template when
// none has its name (one that exists is used as it is:
// resolveSharedStorage then waits for it to bind). A claim the API server
// refuses (its location overlaps another claim's, made since the set was
// admitted) is not an error of the pass: the set says why it waits, and
// tries again on its next pass.
func ensureSharedBucketClaim(ctx *LogContext, claim *mov1.BucketClaim) (string, error) {
	created, err := framework.CreateIfAbsent(ctx, ctx.Client, ctx.Reader, client.ObjectKeyFromObject(claim),
		&mov1.BucketClaim{}, func() client.Object { return claim })
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		return fmt.Sprintf("the BucketClaim %s of sharedStorage.bucketClaimTemplate was refused: %v", claim.Name, err), nil
	case err != nil:
		return "", fmt.Errorf("ensure the BucketClaim %s: %w", claim.Name, err)
	case created:
		loc := claimLocation(claim.Spec.S3)
		ctx.Log.Info("Created the shared storage's BucketClaim", "claim", claim.Name, "location", loc)
		ctx.Event(corev1.EventTypeNormal, mov1.EventSharedClaimCreated, "Created the BucketClaim %s (%s, reclaimPolicy %s)",
			claim.Name, loc, claim.Spec.ReclaimPolicy)
	}
	return "", nil
}

// deleteSharedClaim deletes the shared filesystem claim if this set made it
// (its labels say so); a user's claim stays.
func deleteSharedClaim(ctx *LogContext) error {
	l := ctx.Obj
	fs := l.Spec.SharedStorage.FileSystem
	if fs == nil {
		return nil
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: fs.ClaimName}}
	deleted, err := framework.DeleteGenerated(ctx, ctx.Client, claim, build.Labels(l.Name, build.ComponentShared))
	if err != nil {
		return fmt.Errorf("the shared filesystem claim: %w", err)
	}
	if deleted {
		ctx.Event(corev1.EventTypeNormal, commonv1.EventVolumeDeleted, "Deleted the shared filesystem claim %s (reclaimPolicy Delete)", fs.ClaimName)
	}
	return nil
}
