package zookeeper

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// The admission webhooks of ZookeeperClusters. The CRD's schema defaults
// every scalar and rejects what a schema can check; the webhooks add what
// it cannot: the memory request derived from the heap (zkv1.Default), the
// comparisons of the heap with the memory request and limit, the image
// reference, the node port's range and the types of known settings
// (Validate), the API server's validation of the children the spec makes
// (RenderChildren), and warnings about replica counts (Warnings). The controller applies the
// same Default and Validate on every pass, so it is safe without them.
//
// +kubebuilder:webhook:path=/mutate-zookeeper-steward-dev-v1alpha1-zookeepercluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=zookeeper.steward.dev,resources=zookeeperclusters,verbs=create;update,versions=v1alpha1,name=mzookeepercluster.steward.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-zookeeper-steward-dev-v1alpha1-zookeepercluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=zookeeper.steward.dev,resources=zookeeperclusters,verbs=create;update,versions=v1alpha1,name=vzookeepercluster.steward.dev,admissionReviewVersions=v1

// SetupWebhooks registers the ZookeeperCluster webhooks on
// mgr.GetWebhookServer(), built by the framework from the controller's
// Default, DefaultUpdate, Validate and Warnings (framework.SetupWebhooks).
// It is the system's Webhooks function. The API types must be in mgr's
// scheme already (Setup registers them): the manager may call it once
// running, when the scheme is no longer safe to change.
func SetupWebhooks(mgr ctrl.Manager) error {
	// The hooks use no option: a zero Controller has them all.
	if err := framework.SetupWebhooks[*Cluster](mgr, &Controller{}); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

// RenderChildren returns the children a new cluster of zk's spec gets,
// for the API server to validate at admission and before the controller
// applies them (framework.ChildRenderer): the Services, the budget and the
// StatefulSet, each with the spec fields its fields come from.
func (*Controller) RenderChildren(zk *Cluster) []framework.RenderedChild {
	data := build.ConfigData(zk)
	sts := build.StatefulSet(zk, zk.Spec.Replicas, build.ConfigMapName(zk, data), build.ConfigRevision(data))
	return []framework.RenderedChild{
		{Object: build.HeadlessService(zk)},
		{Object: build.ClientService(zk), Sources: build.ClientServiceSources},
		{Object: build.PodDisruptionBudget(zk), Sources: build.PodDisruptionBudgetSources},
		{Object: sts, Sources: build.StatefulSetSources},
	}
}

// DefaultUpdate lets a memory request the defaulting webhook derived from
// the heap follow a change of the heap (zkv1.DefaultUpdate,
// framework.UpdateDefaulter).
func (*Controller) DefaultUpdate(old, zk *Cluster) { zkv1.DefaultUpdate(old, zk) }

// Warnings returns the admission warnings of a valid but doubtful spec
// (framework.Warner):
//
//   - an even spec.replicas: a quorum is a majority, so an even count
//     tolerates no more failures than replicas-1, with one more server to
//     lose it; even counts are meant as steps of a scaling;
//   - spec.replicas 1: no fault tolerance;
//   - a memory limit that leaves the JVM less than zkv1.JVMMemoryOverhead
//     beyond its heap (Validate rejects one that leaves nothing).
func (*Controller) Warnings(zk *Cluster) []string {
	var warnings []string
	switch r := zk.Spec.Replicas; {
	case r == 1:
		warnings = append(warnings, "spec.replicas: a single server has no fault tolerance: "+
			"the cluster is unavailable whenever that server restarts or its node fails")
	case r > 0 && r%2 == 0:
		warnings = append(warnings, fmt.Sprintf("spec.replicas: %d servers survive no more failures than %d do (%s): "+
			"a quorum is a majority, %d of %d; prefer an odd count",
			r, r-1, count(int((r-1)/2), "failed server", "failed servers"), r/2+1, r))
	}
	if limit, ok := zk.Spec.Resources.Limits[corev1.ResourceMemory]; ok {
		heap, err := zkv1.ParseHeap(zk.Spec.Heap)
		room := limit.Value() - heap
		if err == nil && room > 0 && room < zkv1.JVMMemoryOverhead {
			warnings = append(warnings, fmt.Sprintf("spec.resources.limits.memory: %s leaves the JVM %s beyond spec.heap (%s); "+
				"it uses about %s there (metaspace, threads, buffers) and is OOM-killed at the limit",
				limit.String(), resource.NewQuantity(room, resource.BinarySI), zk.Spec.Heap,
				resource.NewQuantity(zkv1.JVMMemoryOverhead, resource.BinarySI)))
		}
	}
	return warnings
}
