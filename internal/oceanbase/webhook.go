package oceanbase

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/oceanbase/build"
)

// The admission webhooks of OBClusters, OBTenants and OBParameters. The
// CRDs' schemas default and check what a schema can; the webhooks add
// Default, Validate, the API server's validation of the children a
// cluster's spec makes (RenderChildren), names no other cluster's
// children take (Clashes) and, for a tenant or a parameter, the checks
// against its cluster (Admit). The controllers apply the same Default
// and Validate on every pass, so they are safe without them.
//
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obcluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obclusters,verbs=create;update,versions=v1alpha1,name=mobcluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obclusters,verbs=create;update,versions=v1alpha1,name=vobcluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-oceanbase-steward-dev-v1alpha1-obtenant,mutating=true,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenants,verbs=create;update,versions=v1alpha1,name=mobtenant.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-oceanbase-steward-dev-v1alpha1-obtenant,mutating=false,failurePolicy=fail,sideEffects=None,groups=oceanbase.steward.dev,resources=obtenants,verbs=create;update,versions=v1alpha1,name=vobtenant.steward.dev,admissionReviewVersions=v1

// SetupWebhooks registers the OBCluster's, OBTenant's and OBParameter's
// webhooks on mgr.GetWebhookServer() (framework.SetupWebhooks). It is the
// system's Webhooks function; Setup must have registered the API types.
func SetupWebhooks(mgr ctrl.Manager) error {
	err := framework.SetupWebhooks[*Cluster](mgr, New(Options{}))
	if err == nil {
		err = setupTenantWebhooks(mgr)
	}
	if err == nil {
		err = setupParameterWebhooks(mgr)
	}
	if err != nil {
		return fmt.Errorf("oceanbase: %w", err)
	}
	return nil
}

// Validate checks what the CRD's schema cannot:
//
//   - spec.image: a container image reference;
//   - each resource request within its limit (Kubernetes rejects such pods);
//   - each zone's name short enough for its StatefulSet's name (with
//     metadata.name) to fit its pods' labels;
//   - spec.credentials: names a Secret can have.
//
// What the API server checks on the children (node selectors,
// tolerations, affinity, topology spread, quantities, storage class) it
// checks itself, on the children RenderChildren renders.
func (*Controller) Validate(c *Cluster) error {
	spec := field.NewPath("spec")
	errs := standard.ValidateImage(spec.Child("image"), c.Spec.Image)
	errs = append(errs, standard.ValidateResources(spec.Child("resources"), c.Spec.Resources)...)
	for i, z := range c.Spec.Zones {
		if name := build.StatefulSetName(c, z.Name); len(name) > build.MaxStatefulSetName {
			errs = append(errs, field.Invalid(spec.Child("zones").Index(i).Child("name"), z.Name, fmt.Sprintf(
				"the zone's StatefulSet would be %s, %d characters: metadata.name and the zone's name together must have at most %d "+
					"(its pods' controller-revision-hash label adds a hash to it, within 63)", name, len(name), build.MaxStatefulSetName)))
		}
	}
	credentials := spec.Child("credentials")
	errs = append(errs, standard.ValidateObjectName(credentials.Child("root"), c.Spec.Credentials.Root, "Secret")...)
	errs = append(errs, standard.ValidateObjectName(credentials.Child("operator"), c.Spec.Credentials.Operator, "Secret")...)
	return errs.ToAggregate()
}

// RenderChildren returns the children a new cluster of c's spec gets, for
// the API server to validate at admission and before the controller
// applies them (framework.ChildRenderer): the Services, and each zone's
// StatefulSet and the Service of its last server (the longest name), each
// with the spec fields its fields come from.
func (c *Controller) RenderChildren(ob *Cluster) []framework.RenderedChild {
	children := []framework.RenderedChild{
		{Object: build.HeadlessService(ob)},
		{Object: build.ClientService(ob)},
	}
	for i, zone := range ob.Spec.Zones {
		children = append(children,
			framework.RenderedChild{Object: build.ServerService(ob, zone.Name, int(max(zone.Replicas, 1))-1), Sources: build.ServerServiceSources(i)},
			framework.RenderedChild{Object: build.StatefulSet(ob, zone, zone.Replicas, c.opts.ClusterDomain), Sources: build.StatefulSetSources(ob, i)})
	}
	return children
}

// Clashes refuses a cluster whose children would take the name of
// another OBCluster's child in the namespace (framework.ClashChecker):
// cluster "a"'s headless Service is "a-observers", which cluster
// "a-observers" takes for its client Service; cluster "a"'s server
// Services "a-b-0" are cluster "a-b-0"'s client Service. Of two
// clusters created so (the webhook off), the older keeps its names.
func (*Controller) Clashes(ctx context.Context, r client.Reader, ob *Cluster) error {
	var list obv1.OBClusterList
	if err := r.List(ctx, &list, client.InNamespace(ob.Namespace)); err != nil {
		return fmt.Errorf("list OBClusters: %w", err)
	}
	mine := serviceNames(ob)
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == ob.Name || !other.DeletionTimestamp.IsZero() || !framework.Older(other, ob) {
			continue
		}
		theirs := serviceNames(other)
		for _, name := range slices.Sorted(maps.Keys(mine)) {
			if _, ok := theirs[name]; ok {
				return field.Invalid(mine[name].path, mine[name].value, fmt.Sprintf(
					"makes the Service %s, which OBCluster %s makes too: rename one of them", name, other.Name))
			}
		}
	}
	return nil
}

// serviceNames are the names of the Services c makes, or would make once
// each zone is scaled to its most servers, each with the field it comes
// from. Its StatefulSets and views cannot clash: a zone's name starts
// with a letter, and the names another cluster makes from its own end in
// its zones' names or a number.
func serviceNames(c *Cluster) map[string]source {
	meta := source{field.NewPath("metadata", "name"), c.Name}
	names := map[string]source{build.ClientServiceName(c): meta, build.HeadlessServiceName(c): meta}
	for i, z := range c.Spec.Zones {
		for ordinal := range maxServers {
			names[build.PodName(c, z.Name, ordinal)] = source{field.NewPath("spec", "zones").Index(i).Child("name"), z.Name}
		}
	}
	return names
}

// source is the field a name comes from, and its value.
type source struct {
	path  *field.Path
	value string
}

// maxServers is the most servers of a zone (the schema's maximum of
// spec.zones[].replicas).
const maxServers = 16
