package workload_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/testenv"
)

const gate corev1.PodConditionType = "example.steward.dev/serving"

func TestNotReadyDetail(t *testing.T) {
	waiting := func(reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	exited := func(st corev1.ContainerStatus, reason string, code int32) corev1.ContainerStatus {
		st.RestartCount = 7
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}
		return st
	}
	gated := corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}}}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"unschedulable": {corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}}},
			"Pending: 0/1 nodes are available: 1 Insufficient cpu."},
		"crash-looping, without its moving back-off": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CrashLoopBackOff", "back-off 10s")}}},
			"container app is CrashLoopBackOff"},
		"crash-looping, with how it last ended but not how often": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			exited(waiting("CrashLoopBackOff", "back-off 40s"), "Error", 3)}}},
			"container app is CrashLoopBackOff (it exited with code 3)"},
		"crash-looping, killed at its memory limit": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			exited(waiting("CrashLoopBackOff", "back-off 5m0s"), "OOMKilled", 137)}}},
			"container app is CrashLoopBackOff (it was OOMKilled)"},
		"image not pulled": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff", "Back-off pulling image")}}},
			"container app is ImagePullBackOff (Back-off pulling image)"},
		"starting says nothing more": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating", "")}}}, ""},
		"gate not set yet":           {corev1.Pod{Spec: gated}, "readiness gate example.steward.dev/serving not evaluated yet"},
		"gate false": {corev1.Pod{Spec: gated, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: gate,
			Status: corev1.ConditionFalse, Message: "ListJobs: timeout"}}}}, "example.steward.dev/serving: ListJobs: timeout"},
		"gate true": {corev1.Pod{Spec: gated, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: gate,
			Status: corev1.ConditionTrue}}}}, ""},
	} {
		if got := workload.NotReadyDetail(&tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-0"}}
	if got := workload.NotReadyMessage(p); got != "p-0 is not ready" {
		t.Errorf("NotReadyMessage = %q", got)
	}
}

// TestSetPodCondition sets a readiness gate's condition on a real API
// server: the kubelet's conditions stay, a repeat writes nothing, and the
// transition time moves only with the status.
func TestSetPodCondition(t *testing.T) {
	c, err := client.New(server.Config(t), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "workload-")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}}}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	set := func(status corev1.ConditionStatus, msg string) bool {
		t.Helper()
		wrote, err := workload.SetPodCondition(t.Context(), c, pod, corev1.PodCondition{Type: gate, Status: status, Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		return wrote
	}
	get := func() *corev1.Pod {
		p := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if !set(corev1.ConditionFalse, "no answer") {
		t.Fatal("the first set wrote nothing")
	}
	if set(corev1.ConditionFalse, "no answer") {
		t.Error("the same condition was written again")
	}
	first := get()
	if len(first.Status.Conditions) != 2 {
		t.Fatalf("conditions %+v, want the kubelet's and the gate's", first.Status.Conditions)
	}
	time.Sleep(1100 * time.Millisecond)
	pod = first.DeepCopy()
	if !set(corev1.ConditionFalse, "still no answer") {
		t.Fatal("a new message was not written")
	}
	second := get()
	if a, b := condition(first, gate), condition(second, gate); !a.LastTransitionTime.Equal(&b.LastTransitionTime) || b.Message != "still no answer" {
		t.Errorf("the message changed the transition time or was lost: %+v then %+v", a, b)
	}
	pod, before := second.DeepCopy(), condition(second, gate)
	time.Sleep(1100 * time.Millisecond) // transition times have a one-second resolution
	set(corev1.ConditionTrue, "answers")
	if got := condition(get(), gate); got.Status != corev1.ConditionTrue || !got.LastTransitionTime.After(before.LastTransitionTime.Time) {
		t.Errorf("after the status changed: %+v", got)
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func TestLastExit(t *testing.T) {
	status := func(name, reason string, code int32, running bool) corev1.ContainerStatus {
		st := corev1.ContainerStatus{Name: name, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
		if running {
			st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}
		if reason != "" {
			st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}
		}
		return st
	}
	for name, tc := range map[string]struct {
		st   corev1.ContainerStatus
		want string
	}{
		"never ended":                    {status("app", "", 0, true), ""},
		"ended well":                     {status("app", "Completed", 0, true), ""},
		"crash-looping, waiting":         {status("app", "Error", 3, false), "container app last exited with code 3"},
		"crash-looping, running for now": {status("app", "Error", 3, true), "container app last exited with code 3"},
		"killed at its memory limit":     {status("app", "OOMKilled", 137, false), "container app was last OOMKilled"},
		"another container's":            {status("sidecar", "Error", 1, false), ""},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.st}}}
		if got := workload.LastExit(pod, "app"); got != tc.want {
			t.Errorf("%s: LastExit = %q, want %q", name, got, tc.want)
		}
	}
}
