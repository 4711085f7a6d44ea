package gpss

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/gpss/build"
)

// The admission webhooks of GpssClusters. The CRD's schema defaults and
// checks what a schema can; the webhooks add Default, Validate (the image,
// spec.config) and the API server's validation of the children the spec
// makes (RenderChildren). The controller applies the same Default and
// Validate on every pass, so it is safe without them.
//
// +kubebuilder:webhook:path=/mutate-gpss-steward-dev-v1alpha1-gpsscluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=gpss.steward.dev,resources=gpssclusters,verbs=create;update,versions=v1alpha1,name=mgpsscluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-gpss-steward-dev-v1alpha1-gpsscluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=gpss.steward.dev,resources=gpssclusters,verbs=create;update,versions=v1alpha1,name=vgpsscluster.steward.dev,admissionReviewVersions=v1

// SetupWebhooks registers the GpssCluster webhooks on
// mgr.GetWebhookServer() (framework.SetupWebhooks). It is the system's
// Webhooks function; Setup must have registered the API types.
func SetupWebhooks(mgr ctrl.Manager) error {
	if err := framework.SetupWebhooks[*Cluster](mgr, New(Options{})); err != nil {
		return fmt.Errorf("gpss: %w", err)
	}
	return nil
}

// RenderChildren returns the children a new cluster of g's spec gets, for
// the API server to validate at admission and before the controller
// applies them (framework.ChildRenderer), each with the spec fields its
// fields come from.
func (c *Controller) RenderChildren(g *Cluster) []framework.RenderedChild {
	children := []framework.RenderedChild{
		{Object: build.GRPCService(g)},
		{Object: build.GpfdistService(g, 0), Sources: build.GpfdistServiceSources},
		{Object: build.StatefulSet(g, g.Spec.Replicas, g.Spec.Image, g.Name+"-config"), Sources: build.StatefulSetSources},
	}
	if build.ManagesEtcd(g) {
		children = append(children, framework.RenderedChild{Object: build.EtcdStatefulSet(g, c.opts.ClusterDomain), Sources: build.EtcdStatefulSetSources})
	}
	return children
}

// clusterIDIndex is the cache's index of GpssClusters by spec.clusterID,
// which Clashes reads.
const clusterIDIndex = "spec.clusterID"

// Clashes refuses a clusterID another GpssCluster of the namespace already
// uses (framework.ClashChecker): two clusters with one id would share their
// jobs and instances in etcd. Of two clusters created with the same id
// (the webhook off, or two creates at once), the older keeps it.
func (*Controller) Clashes(ctx context.Context, r client.Reader, g *Cluster) error {
	var list gpssv1.GpssClusterList
	// Every pass asks: the cache's index gives the clusters with this id
	// (required and immutable), read and never changed, not copies.
	if err := r.List(ctx, &list, client.InNamespace(g.Namespace), client.MatchingFields{clusterIDIndex: g.Spec.ClusterID},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list GpssClusters: %w", err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == g.Name || other.Spec.ClusterID != g.Spec.ClusterID || !other.DeletionTimestamp.IsZero() || !framework.Older(other, g) {
			continue
		}
		return field.Duplicate(field.NewPath("spec", "clusterID"),
			fmt.Sprintf("%s (GpssCluster %s uses it)", g.Spec.ClusterID, other.Name))
	}
	return nil
}
