package build

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// PodDisruptionBudget returns the servers' budget: at most
// spec.maxUnavailable of them down by voluntary disruptions. Unhealthy
// (not serving) pods may always be evicted: they do not count towards the
// quorum, and a crash-looping server must not block a node drain.
func PodDisruptionBudget(zk *zkv1.ZookeeperCluster) *policyv1.PodDisruptionBudget {
	maxUnavailable := zkv1.DefaultMaxUnavailable
	if zk.Spec.MaxUnavailable != nil {
		maxUnavailable = *zk.Spec.MaxUnavailable
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:      zk.Name,
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentServer),
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable:             ptr.To(intstr.FromInt32(maxUnavailable)),
			Selector:                   &metav1.LabelSelector{MatchLabels: Selector(zk, ComponentServer)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}
