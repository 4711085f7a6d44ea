package oceanbase

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
)

// TestServiceNamesStartWithTheCluster checks what Clashes relies on to
// skip most clusters (framework.NamesMayClash): every Service a cluster
// makes is named after it.
func TestServiceNamesStartWithTheCluster(t *testing.T) {
	c := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "ob"},
		Spec: obv1.OBClusterSpec{Zones: []obv1.OBZoneSpec{{Name: "z1"}, {Name: "z2"}}}}
	names := serviceNames(c)
	if len(names) != 2+2*maxServers {
		t.Errorf("serviceNames gave %d names, want the client and headless Services and %d per zone", len(names), maxServers)
	}
	for name := range names {
		if !strings.HasPrefix(name, c.Name) {
			t.Errorf("Service %s does not start with the cluster's name %s", name, c.Name)
		}
	}
}
