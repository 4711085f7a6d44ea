package kubectlsteward_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(zkv1.AddToScheme(s))
	utilruntime.Must(obv1.AddToScheme(s))
	utilruntime.Must(mov1.AddToScheme(s))
	return s
}
