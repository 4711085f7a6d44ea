package gpss_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestReadinessMeansAnswering gives instance 1 an address that accepts
// connections and answers nothing, as an instance cut off from its etcd
// does: its pod's serving condition (its readiness gate) is False with
// why, the cluster is not Ready and says which instance does not answer;
// once the instance answers, both recover.
func TestReadinessMeansAnswering(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	sim := gpsstest.RunSimulator(t, etcd, "c-rd", "rd-sim", simulator.Knobs{})
	mute, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never speaks gRPC
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	var second atomic.Value
	second.Store(mute.Addr().String())
	opts := through(sim)
	opts.InstanceAddress = func(_ *gpssv1.GpssCluster, p *corev1.Pod) string {
		if strings.HasSuffix(p.Name, "-1") {
			return second.Load().(string)
		}
		return sim.GRPCAddr
	}
	c, ns := setup(t, opts)
	if err := c.Create(t.Context(), newCluster(ns, "rd", func(s *gpssv1.GpssClusterSpec) {
		s.Replicas, s.ClusterID, s.Etcd.Endpoints = 2, "c-rd", []string{etcd}
	})); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the instances' StatefulSet", func() (bool, string) { return exists(t, c, ns, "rd", sts), "not yet" })
	markReady(t, c, sts, true)

	testenv.Eventually(t, "rd-1 not serving, the cluster not Ready", func() (bool, string) {
		pod := &corev1.Pod{}
		exists(t, c, ns, "rd-1", pod)
		serving := podCondition(pod, build.ServingCondition)
		g := cluster(t, c, ns, "rd")
		cond := meta.FindStatusCondition(g.Status.Conditions, framework.ConditionReady)
		return serving != nil && serving.Status == corev1.ConditionFalse && strings.Contains(serving.Message, "ListJobs") &&
				cond != nil && cond.Status == "False" && strings.Contains(cond.Message, "rd-1 is not ready: gpss.steward.dev/serving: ListJobs") &&
				g.Status.ReadyReplicas == 1,
			fmt.Sprintf("serving %+v; Ready %+v; readyReplicas %d", serving, cond, g.Status.ReadyReplicas)
	})
	pod := &corev1.Pod{}
	exists(t, c, ns, "rd-0", pod)
	if s := podCondition(pod, build.ServingCondition); s == nil || s.Status != corev1.ConditionTrue {
		t.Errorf("rd-0, which answers, has serving condition %+v", s)
	}

	second.Store(sim.GRPCAddr)
	testenv.Eventually(t, "Ready once rd-1 answers", func() (bool, string) {
		g := cluster(t, c, ns, "rd")
		ok, why := ready(g)
		return ok && g.Status.ReadyReplicas == 2, why
	})
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestRolloutWaitsForAnInstanceNotHeardYet rolls a change while one
// instance runs and has not been heard yet (as every instance is right
// after an operator upgrade adds the serving gate, before its first
// answer): the rollout restarts nothing out of turn (it may serve) and
// says it waits on that instance. An instance asked and not answering is
// restarted (the e2e's wrong etcd address).
func TestRolloutWaitsForAnInstanceNotHeardYet(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	sim := gpsstest.RunSimulator(t, etcd, "c-wt", "wt-sim", simulator.Knobs{})
	opts := through(sim)
	opts.InstanceAddress = func(_ *gpssv1.GpssCluster, p *corev1.Pod) string {
		if strings.HasSuffix(p.Name, "-1") {
			return "" // never asked: no serving condition
		}
		return sim.GRPCAddr
	}
	c, ns := setup(t, opts)
	player := &statefulSetPlayer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); player.run(ctx, c, ns, "wt") }()
	t.Cleanup(func() { cancel(); <-done })
	if err := c.Create(t.Context(), newCluster(ns, "wt", func(s *gpssv1.GpssClusterSpec) {
		s.Replicas, s.ClusterID, s.Etcd.Endpoints, s.RolloutHaltSeconds = 2, "c-wt", []string{etcd}, 2
	})); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "both pods, wt-0 serving", func() (bool, string) {
		pod := &corev1.Pod{}
		var s *corev1.PodCondition
		if exists(t, c, ns, "wt-0", pod) {
			s = podCondition(pod, build.ServingCondition)
		}
		return player.count() == 2 && s != nil && s.Status == corev1.ConditionTrue, fmt.Sprintf("%d pods, serving %+v", player.count(), s)
	})
	if err := c.Patch(t.Context(), cluster(t, c, ns, "wt"), client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"config":{"Logging":{"BackendLevel":"debug"}}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the rollout waits on wt-1", func() (bool, string) {
		cond := meta.FindStatusCondition(cluster(t, c, ns, "wt").Status.Conditions, framework.ConditionReady)
		return cond != nil && cond.Reason == commonv1.ReasonRolloutHalted && strings.Contains(cond.Message, "wt-1 runs"), fmt.Sprintf("%+v", cond)
	})
	if got := player.since(2); len(got) != 0 {
		t.Errorf("re-created %v while an instance was not heard yet, want none", got)
	}
}
