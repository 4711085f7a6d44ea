package build

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
)

func TestViews(t *testing.T) {
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ob-a"}}
	for _, tc := range []struct {
		zone          string
		ordinal       int
		zoneName, pod string
	}{
		{zone: "z1", ordinal: 0, zoneName: "ob-a-z1", pod: "ob-a-z1-0"},
		{zone: "hz", ordinal: 12, zoneName: "ob-a-hz", pod: "ob-a-hz-12"},
	} {
		z := ZoneView(ob, tc.zone)
		if z.Name != tc.zoneName || z.Namespace != "ns" || z.Spec != (obv1.OBZoneViewSpec{Cluster: "ob-a", Zone: tc.zone}) {
			t.Errorf("ZoneView(%s) = %s/%s %+v", tc.zone, z.Namespace, z.Name, z.Spec)
		}
		if z.Name != StatefulSetName(ob, tc.zone) {
			t.Errorf("the OBZone %s is not named after its StatefulSet %s", z.Name, StatefulSetName(ob, tc.zone))
		}
		s := ServerView(ob, tc.zone, tc.ordinal)
		want := obv1.OBServerViewSpec{Cluster: "ob-a", Zone: tc.zone, Ordinal: int32(tc.ordinal)}
		if s.Name != tc.pod || s.Namespace != "ns" || s.Spec != want {
			t.Errorf("ServerView(%s, %d) = %s/%s %+v", tc.zone, tc.ordinal, s.Namespace, s.Name, s.Spec)
		}
		if s.Name != PodName(ob, tc.zone, tc.ordinal) {
			t.Errorf("the OBServer %s is not named after its pod %s", s.Name, PodName(ob, tc.zone, tc.ordinal))
		}
	}
}
