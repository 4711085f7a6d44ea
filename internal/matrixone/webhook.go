package matrixone

import (
	"fmt"
	"maps"

	ctrl "sigs.k8s.io/controller-runtime"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// The admission webhooks of the MatrixOne cluster and sets. The CRDs' schemas default
// and check what a schema can; the webhooks add Default, Validate (the
// image, the user's TOML, the resources) and the API server's validation
// of the children a spec makes (RenderChildren). The controllers apply the
// same Default and Validate on every pass, so they are safe without them.
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
