package build

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
)

// Components of a MatrixOneCluster's sets.
const (
	ComponentClusterLog   = "log-set"
	ComponentClusterTN    = "tn-set"
	ComponentClusterCN    = "cn-set"
	ComponentClusterProxy = "proxy-set"
	// ComponentClusterMonitor is the cluster's PodMonitor's.
	ComponentClusterMonitor = "monitor"
)

// ClusterSets are the sets a MatrixOneCluster makes.
type ClusterSets struct {
	Log   *mov1.LogSet
	CNs   []*mov1.CNSet // in the spec's order
	TN    *mov1.TNSet
	Proxy *mov1.ProxySet
}

// ClusterLogSetName names a cluster's LogSet.
func ClusterLogSetName(c *mov1.MatrixOneCluster) string { return c.Name + "-log" }

// ClusterCNSetName names the CNSet of a cluster's group.
func ClusterCNSetName(c *mov1.MatrixOneCluster, group string) string { return c.Name + "-" + group }

// ClusterTNSetName names a cluster's TNSet.
func ClusterTNSetName(c *mov1.MatrixOneCluster) string { return c.Name + "-tn" }

// ClusterProxySetName names a cluster's ProxySet.
func ClusterProxySetName(c *mov1.MatrixOneCluster) string { return c.Name + "-proxy" }

// Sets returns the sets of c: each one's spec from the cluster's, every
// pod on the cluster's image.
func Sets(c *mov1.MatrixOneCluster) ClusterSets {
	s := &c.Spec
	pods := func(r mov1.RoleSpec) mov1.PodSetSpec {
		return mov1.PodSetSpec{Image: s.Image, ImagePullPolicy: s.ImagePullPolicy, RoleSpec: *r.DeepCopy()}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: c.Namespace, Name: name} }
	logName := ClusterLogSetName(c)
	out := ClusterSets{
		Log: &mov1.LogSet{ObjectMeta: meta(logName), Spec: mov1.LogSetSpec{
			Replicas: s.LogService.Replicas, ShardReplicas: s.LogService.ShardReplicas, LogShards: s.LogService.LogShards,
			StoreFailureTimeout: s.LogService.StoreFailureTimeout,
			PodSetSpec:          pods(s.LogService.RoleSpec), Storage: *s.LogService.Storage.DeepCopy(),
			SharedStorage: *s.SharedStorage.DeepCopy(), RootPassword: s.RootPassword, RestoreFrom: s.RestoreFrom.DeepCopy(),
		}},
		TN: &mov1.TNSet{ObjectMeta: meta(ClusterTNSetName(c)), Spec: mov1.TNSetSpec{
			LogSet: logName, PodSetSpec: pods(s.TN.RoleSpec), Storage: *s.TN.Storage.DeepCopy(),
		}},
		Proxy: &mov1.ProxySet{ObjectMeta: meta(ClusterProxySetName(c)), Spec: mov1.ProxySetSpec{
			LogSet: logName, Replicas: s.Proxy.Replicas, PodSetSpec: pods(s.Proxy.RoleSpec), ServiceType: s.Proxy.ServiceType,
		}},
	}
	for _, g := range s.CNGroups {
		g := g.DeepCopy()
		out.CNs = append(out.CNs, &mov1.CNSet{ObjectMeta: meta(ClusterCNSetName(c, g.Name)), Spec: mov1.CNSetSpec{
			LogSet: logName, Replicas: g.Replicas, DrainTimeout: g.DrainTimeout, Labels: g.Labels, PodSetSpec: pods(g.RoleSpec), Storage: g.Storage,
		}})
	}
	mov1.DefaultLogSet(out.Log)
	mov1.DefaultTNSet(out.TN)
	for _, cn := range out.CNs {
		mov1.DefaultCNSet(cn)
	}
	mov1.DefaultProxySet(out.Proxy)
	return out
}
