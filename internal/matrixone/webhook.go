package matrixone

import (
	"context"
	"fmt"
	"maps"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// The admission webhooks of the MatrixOne cluster and sets. The CRDs' schemas default
// and check what a schema can; the webhooks add Default, Validate (the
// image, the user's TOML, the resources, the durations, the shared
// storage, the names of Secrets and claims, CN groups whose sets would
// make another set's children), the API server's validation of the
// children a spec makes (RenderChildren), for a cluster, names no other
// cluster's sets make (Clashes), and for a BucketClaim, a location no
// other claim's overlaps (Admit). The controllers apply the same Default
// and Validate on every pass, so they are safe without them.
//
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-matrixonecluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=matrixoneclusters,verbs=create;update,versions=v1alpha1,name=mmatrixonecluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-matrixonecluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=matrixoneclusters,verbs=create;update,versions=v1alpha1,name=vmatrixonecluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-logset,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=logsets,verbs=create;update,versions=v1alpha1,name=mlogset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-logset,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=logsets,verbs=create;update,versions=v1alpha1,name=vlogset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-tnset,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=tnsets,verbs=create;update,versions=v1alpha1,name=mtnset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-tnset,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=tnsets,verbs=create;update,versions=v1alpha1,name=vtnset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-cnset,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=cnsets,verbs=create;update,versions=v1alpha1,name=mcnset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-cnset,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=cnsets,verbs=create;update,versions=v1alpha1,name=vcnset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-proxyset,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=proxysets,verbs=create;update,versions=v1alpha1,name=mproxyset.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-bucketclaim,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=bucketclaims,verbs=create;update,versions=v1alpha1,name=mbucketclaim.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-bucketclaim,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=bucketclaims,verbs=create;update,versions=v1alpha1,name=vbucketclaim.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-backupjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backupjobs,verbs=create;update,versions=v1alpha1,name=mbackupjob.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-backupjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backupjobs,verbs=create;update,versions=v1alpha1,name=vbackupjob.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-backup,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backups,verbs=create;update,versions=v1alpha1,name=mbackup.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-backup,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backups,verbs=create;update,versions=v1alpha1,name=vbackup.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-matrixone-steward-dev-v1alpha1-backupschedule,mutating=true,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backupschedules,verbs=create;update,versions=v1alpha1,name=mbackupschedule.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-backupschedule,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=backupschedules,verbs=create;update,versions=v1alpha1,name=vbackupschedule.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-matrixone-steward-dev-v1alpha1-proxyset,mutating=false,failurePolicy=fail,sideEffects=None,groups=matrixone.steward.dev,resources=proxysets,verbs=create;update,versions=v1alpha1,name=vproxyset.steward.dev,admissionReviewVersions=v1

// SetupWebhooks registers the MatrixOne sets' webhooks on
// mgr.GetWebhookServer() (framework.SetupWebhooks). It is the system's
// Webhooks function; Setup must have registered the API types.
func SetupWebhooks(mgr ctrl.Manager) error {
	for _, setup := range []func() error{
		func() error { return framework.SetupWebhooks[*LogSet](mgr, NewLogSetController(Options{})) },
		func() error { return framework.SetupWebhooks[*mov1.TNSet](mgr, NewTNSetController(Options{})) },
		func() error { return framework.SetupWebhooks[*mov1.CNSet](mgr, NewCNSetController(Options{})) },
		func() error { return framework.SetupWebhooks[*mov1.ProxySet](mgr, NewProxySetController(Options{})) },
		func() error { return framework.SetupWebhooks[*Cluster](mgr, NewClusterController()) },
		func() error { return framework.SetupWebhooks[*BucketClaim](mgr, NewBucketClaimController(Options{})) },
		func() error { return framework.SetupWebhooks[*BackupJob](mgr, NewBackupJobController(Options{})) },
		func() error { return framework.SetupWebhooks[*Backup](mgr, NewBackupController(Options{})) },
		func() error {
			return framework.SetupWebhooks[*BackupSchedule](mgr, NewBackupScheduleController(Options{}))
		},
	} {
		if err := setup(); err != nil {
			return fmt.Errorf("matrixone: %w", err)
		}
	}
	return nil
}

// RenderChildren returns the children a new LogSet of l's spec gets, for
// the API server to validate at admission (framework.ChildRenderer), each
// with the spec fields its fields come from.
func (*LogSetController) RenderChildren(l *LogSet) []framework.RenderedChild {
	return []framework.RenderedChild{
		{Object: build.LogHeadlessService(l)},
		{Object: build.LogGossipService(l)},
		{Object: build.LogStatefulSet(l, l.Name+"-config"), Sources: statefulSetSources},
	}
}

// statefulSetSources maps a set's StatefulSet's fields to the spec's.
var statefulSetSources = func() map[string]string {
	const container = "spec.template.spec.containers[0]"
	s := map[string]string{
		container + ".image":                                   "spec.image",
		container + ".imagePullPolicy":                         "spec.imagePullPolicy",
		container + ".resources":                               "spec.resources",
		"spec.volumeClaimTemplates[0].spec.resources[storage]": "spec.storage.size",
		"spec.volumeClaimTemplates[0].spec.storageClassName":   "spec.storage.storageClassName",
	}
	maps.Copy(s, standard.PlacementSources("spec.template.spec"))
	return s
}()

// RenderChildren returns the sets a new cluster of c's spec makes, for
// the API server to validate at admission (their schemas, and their
// webhooks: their own children), each with the cluster's fields its
// fields come from: a set's spec is its role's, but for the fields every
// role shares.
func (*ClusterController) RenderChildren(c *Cluster) []framework.RenderedChild {
	sets := build.Sets(c)
	sources := func(role string) map[string]string {
		return map[string]string{
			"spec":                 role,
			"spec.image":           "spec.image",
			"spec.imagePullPolicy": "spec.imagePullPolicy",
			"spec.sharedStorage":   "spec.sharedStorage",
			"spec.rootPassword":    "spec.rootPassword",
			"spec.logSet":          "metadata.name",
		}
	}
	children := []framework.RenderedChild{
		{Object: sets.Log, Sources: sources("spec.logService")},
		{Object: sets.TN, Sources: sources("spec.tn")},
		{Object: sets.Proxy, Sources: sources("spec.proxy")},
	}
	for i, cn := range sets.CNs {
		children = append(children, framework.RenderedChild{Object: cn, Sources: sources(fmt.Sprintf("spec.cnGroups[%d]", i))})
	}
	return children
}

// groupNameClashes refuses a CN group whose set would make a child another
// of the cluster's sets makes: a group "tn" (its CNSet <name>-tn makes the
// TNSet's StatefulSet and pods), "log" or "proxy"; a group "tn-headless"
// or "<other group>-headless" (its SQL Service is that set's headless
// Service).
func groupNameClashes(c *Cluster) field.ErrorList {
	var errs field.ErrorList
	seen := map[childName]string{} // the set that makes it
	refused := map[string]bool{}   // sets refused: one error each
	for _, ch := range clusterChildren(c) {
		set, ok := seen[ch.childName]
		switch {
		case !ok:
			seen[ch.childName] = ch.set
		case set != ch.set && !refused[ch.set]:
			refused[ch.set] = true
			errs = append(errs, field.Invalid(ch.path, ch.value, fmt.Sprintf(
				"the %s would make the %s %s, which the %s makes: choose another name", ch.set, ch.kind, ch.name, set)))
		}
	}
	return errs
}

// Clashes refuses a cluster whose sets would make a child that another
// MatrixOneCluster's sets make in the namespace (framework.ClashChecker):
// cluster "a" with a CN group "b-tn" makes the StatefulSet a-b-tn, as
// cluster "a-b" does for its TN. Of two clusters created so (the webhook
// off), the older keeps its names.
func (*ClusterController) Clashes(ctx context.Context, r client.Reader, c *Cluster) error {
	var list mov1.MatrixOneClusterList
	// Every pass asks, and reads each cluster of the namespace: the
	// cache's own objects, read and never changed, not copies.
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list MatrixOneClusters: %w", err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		// Every child's name starts with its cluster's (clusterChildren).
		if other.Name == c.Name || !other.DeletionTimestamp.IsZero() || !framework.Older(other, c) ||
			!framework.NamesMayClash(other.Name, c.Name) {
			continue
		}
		theirs := map[childName]string{}
		for _, ch := range clusterChildren(other) {
			theirs[ch.childName] = ch.set
		}
		for _, ch := range clusterChildren(c) {
			if set, ok := theirs[ch.childName]; ok {
				return field.Invalid(ch.path, ch.value, fmt.Sprintf(
					"the %s would make the %s %s, which the %s of MatrixOneCluster %s makes: choose another name",
					ch.set, ch.kind, ch.name, set, other.Name))
			}
		}
	}
	return nil
}

// childName is a child's kind and name.
type childName struct{ kind, name string }

// clusterChild is a child one of a cluster's sets makes under a name of
// its own: the set's StatefulSet (and so its pods and claims), its
// headless Service, the LogSet's gossip Service and a CN's or proxy's SQL
// Service, with the set, and
// the cluster's field the name comes from and its value.
type clusterChild struct {
	childName
	set   string
	path  *field.Path
	value string
}

// clusterChildren returns the children c's sets make under names of their
// own, the fixed sets' first. It reads names only: every pass of every
// cluster asks it of each cluster of the namespace (Clashes).
func clusterChildren(c *Cluster) []clusterChild {
	var out []clusterChild
	add := func(kind, name string, sqlService bool, path *field.Path, value string) {
		set := kind + " " + name
		out = append(out,
			clusterChild{childName{"StatefulSet", name}, set, path, value},
			clusterChild{childName{"Service", name + "-headless"}, set, path, value})
		if sqlService {
			out = append(out, clusterChild{childName{"Service", name}, set, path, value})
		}
	}
	meta := field.NewPath("metadata", "name")
	logName := build.ClusterLogSetName(c)
	add("LogSet", logName, false, meta, c.Name)
	out = append(out, clusterChild{childName{"Service", build.GossipServiceName(logName)}, "LogSet " + logName, meta, c.Name})
	add("TNSet", build.ClusterTNSetName(c), false, meta, c.Name)
	add("ProxySet", build.ClusterProxySetName(c), true, meta, c.Name)
	for i, g := range c.Spec.CNGroups {
		add("CNSet", build.ClusterCNSetName(c, g.Name), true, field.NewPath("spec", "cnGroups").Index(i).Child("name"), g.Name)
	}
	return out
}

// Admit refuses, at admission only (framework.Admitter), a LogSet whose
// bucketClaimTemplate would make a claim that overlaps another
// (admitBucketClaimTemplate).
func (*LogSetController) Admit(ctx context.Context, r client.Reader, l *LogSet) error {
	return admitBucketClaimTemplate(ctx, r, l.Namespace, field.NewPath("spec", "sharedStorage"), l.Spec.SharedStorage)
}

// Admit refuses, at admission only (framework.Admitter), a cluster whose
// LogSet's bucketClaimTemplate would make a claim that overlaps another
// (admitBucketClaimTemplate).
func (*ClusterController) Admit(ctx context.Context, r client.Reader, c *Cluster) error {
	return admitBucketClaimTemplate(ctx, r, c.Namespace, field.NewPath("spec", "sharedStorage"), c.Spec.SharedStorage)
}

// Admit refuses, at admission only (framework.Admitter), a claim whose
// location overlaps another claim's in any namespace: buckets are global
// to their store, so two namespaces' claims on one bucket would share keys
// as surely as two of one namespace. A create is refused on any overlap;
// an update (of reclaimPolicy: the location is immutable) only when the
// claim yields to the other (claimYields), so that the claim that keeps a
// location is never refused. The controller checks again on every pass
// (Declare): two creates can race past this check.
func (*BucketClaimController) Admit(ctx context.Context, r client.Reader, b *BucketClaim) error {
	creating := true
	if req, err := admission.RequestFromContext(ctx); err == nil {
		creating = req.Operation == admissionv1.Create
	}
	return refuseOverlap(ctx, r, b, func(other *BucketClaim) bool { return creating || claimYields(b, other) },
		field.NewPath("spec", "s3", "keyPrefix"))
}

// refuseOverlap returns, as an Invalid error of keyPrefix, the oldest claim
// whose location overlaps b's and for which refuse holds; nil when none.
func refuseOverlap(ctx context.Context, r client.Reader, b *BucketClaim, refuse func(*BucketClaim) bool, keyPrefix *field.Path) error {
	other, err := overlappingClaim(ctx, r, b, refuse)
	if err != nil || other == nil {
		return err
	}
	return field.Invalid(keyPrefix, b.Spec.S3.KeyPrefix, overlapMessage(other))
}
