package matrixone

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// TestClusterChildrenNameTheSets checks that the names Clashes compares,
// which clusterChildren derives without building the sets, are those of
// the sets build.Sets makes, each starting with the cluster's.
func TestClusterChildrenNameTheSets(t *testing.T) {
	c := &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "mo", Namespace: "ns"},
		Spec: mov1.MatrixOneClusterSpec{CNGroups: []mov1.CNGroupSpec{{Name: "cn"}, {Name: "olap"}}}}
	sets := build.Sets(c)
	want := []string{sets.Log.Name, sets.TN.Name, sets.Proxy.Name}
	for _, cn := range sets.CNs {
		want = append(want, cn.Name)
	}
	var got []string
	gossip := false
	for _, ch := range clusterChildren(c) {
		if !strings.HasPrefix(ch.name, c.Name) { // what Clashes relies on (framework.NamesMayClash)
			t.Errorf("%s %s does not start with the cluster's name %s", ch.kind, ch.name, c.Name)
		}
		if ch.kind == "StatefulSet" {
			got = append(got, ch.name)
		}
		gossip = gossip || (ch.kind == "Service" && ch.name == build.LogGossipName(sets.Log))
	}
	if !slices.Equal(got, want) {
		t.Errorf("clusterChildren's StatefulSets = %v, want the sets' names %v", got, want)
	}
	if !gossip {
		t.Errorf("clusterChildren has no Service %s, the LogSet's gossip Service", build.LogGossipName(sets.Log))
	}
}
