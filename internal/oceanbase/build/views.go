package build

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
)

// Components of the views the cluster controller creates.
const (
	// ComponentZoneView: the OBZones, one per zone.
	ComponentZoneView = "zone-view"
	// ComponentServerView: the OBServers, one per observer.
	ComponentServerView = "server-view"
)

// ZoneView is the OBZone of zone: named like the zone's StatefulSet, its
// spec naming the cluster and the zone.
func ZoneView(c *obv1.OBCluster, zone string) *obv1.OBZone {
	return &obv1.OBZone{
		TypeMeta:   metav1.TypeMeta{APIVersion: obv1.GroupVersion.String(), Kind: "OBZone"},
		ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName(c, zone), Namespace: c.Namespace},
		Spec:       obv1.OBZoneViewSpec{Cluster: c.Name, Zone: zone},
	}
}

// ServerView is the OBServer of the observer of zone with ordinal: named
// like its pod.
func ServerView(c *obv1.OBCluster, zone string, ordinal int) *obv1.OBServer {
	return &obv1.OBServer{
		TypeMeta:   metav1.TypeMeta{APIVersion: obv1.GroupVersion.String(), Kind: "OBServer"},
		ObjectMeta: metav1.ObjectMeta{Name: PodName(c, zone, ordinal), Namespace: c.Namespace},
		Spec:       obv1.OBServerViewSpec{Cluster: c.Name, Zone: zone, Ordinal: int32(ordinal)},
	}
}
