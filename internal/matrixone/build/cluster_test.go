package build_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// TestSetsCarryEachGroupsLabels: a CN group's labels become its CNSet's,
// and a group without labels makes a CNSet without.
func TestSetsCarryEachGroupsLabels(t *testing.T) {
	c := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mo"}, Spec: mov1.MatrixOneClusterSpec{
		CNGroups: []mov1.CNGroupSpec{{Name: "common"}, {Name: "acc1", Labels: []mov1.CNLabel{{Key: "account", Values: []string{"acc1"}}}}},
	}}
	sets := build.Sets(c)
	if len(sets.CNs) != 2 || sets.CNs[0].Spec.Labels != nil {
		t.Fatalf("CNSets %+v", sets.CNs)
	}
	if got := sets.CNs[1].Spec.Labels; !reflect.DeepEqual(got, c.Spec.CNGroups[1].Labels) {
		t.Errorf("the group acc1's CNSet has labels %v", got)
	}
}
