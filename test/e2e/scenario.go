//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// scenario is what every system's lifecycle scenarios share: the running
// test, its namespace and client, and the cluster under test, named for
// kubectl by resource and name, whose pods carry the component label
// podComponent.
type scenario struct {
	t                            *testing.T
	ns                           string
	c                            client.Client
	resource, name, podComponent string
}

func newScenario(t *testing.T, namespacePrefix, resource, name, podComponent string) scenario {
	return scenario{t: t, ns: newNamespace(t, namespacePrefix), c: crClient(t),
		resource: resource, name: name, podComponent: podComponent}
}

// step is one scenario of a system's lifecycle.
type step struct {
	name string
	run  func(t *testing.T)
}

// runSteps runs steps in order, each as a subtest whose test becomes s.t,
// and stops at the first that fails, after dump.
func (s *scenario) runSteps(t *testing.T, dump func(), steps []step) {
	for _, st := range steps {
		s.t = t
		if !t.Run(st.name, func(t *testing.T) { s.t = t; st.run(t) }) {
			dump()
			return
		}
	}
}

// settled says why an object at generation, with status st, is not yet
// Ready at that generation with no flow running; nil when it is.
func settled(generation int64, st *commonv1.StatusCore) error {
	ready := meta.FindStatusCondition(st.Conditions, "Ready")
	switch {
	case st.ObservedGeneration != generation:
		return fmt.Errorf("generation %d observed %d", generation, st.ObservedGeneration)
	case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != generation:
		return fmt.Errorf("not ready: %+v", ready)
	case st.Operation != nil && st.Operation.Phase.Active():
		return fmt.Errorf("operation %s at %s (%s): %s", st.Operation.Name, st.Operation.Step, st.Operation.Phase, st.Operation.Message)
	}
	return nil
}

// getInto reads the cluster into obj.
func (s *scenario) getInto(obj client.Object) {
	s.t.Helper()
	if err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: s.name}, obj); err != nil {
		fatalNow(s.t, err)
	}
}

// patch merge-patches the cluster with kubectl, as a user would.
func (s *scenario) patch(patch string) {
	s.t.Helper()
	if out, err := kubectl("patch", s.resource, s.name, "-n", s.ns, "--type", "merge", "-p", patch); err != nil {
		fatalf(s.t, "%v: %s", err, out)
	}
}

// waitPods waits until exactly n of the cluster's pods exist.
func (s *scenario) waitPods(n int) {
	waitPodCount(s.t, s.ns, "app.kubernetes.io/component="+s.podComponent, n)
}

// startClient starts the pod "client", running the smoke image's server,
// that the scenarios run their clients in with kubectl exec: the
// cluster's Services are reachable only from inside localkube's network.
func (s *scenario) startClient() {
	s.t.Helper()
	startClient(s.t, s.ns)
}

// startClient starts the pod "client" in ns (see scenario.startClient) and
// waits until it runs.
func startClient(t *testing.T, ns string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "client", Image: smokeImage, ImagePullPolicy: corev1.PullNever,
				Args: []string{"serve", "--data", "/tmp"}, VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}}},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if _, err := env.client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "the client pod runs", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
}

// dumpState logs what a failed scenario leaves behind: the cluster and its
// children, the events, the operator's log, and each pod's own words (the
// end of its log, and of the previous container's where one restarted: a
// member that exits at start).
func (s *scenario) dumpState() {
	for _, args := range [][]string{
		{"get", s.resource + ",sts,pods,svc,pvc", "-n", s.ns, "-o", "wide"},
		{"get", s.resource, s.name, "-n", s.ns, "-o", "yaml"},
		{"get", "events", "-n", s.ns, "--sort-by=.lastTimestamp"},
		{"logs", "-n", operatorNamespace, "-l", "app.kubernetes.io/component=controller-manager", "--tail=80"},
	} {
		out, _ := kubectl(args...)
		s.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	pods, err := env.client.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		s.t.Logf("list pods: %v", err)
		return
	}
	for _, pod := range pods.Items {
		logs := [][]string{{"logs", "-n", s.ns, pod.Name, "--tail=40"}}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				logs = append(logs, []string{"logs", "-n", s.ns, pod.Name, "--previous", "--tail=60"})
			}
		}
		for _, args := range logs {
			out, _ := kubectl(args...)
			s.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		}
	}
}
