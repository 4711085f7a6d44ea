package matrixone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestLogSetReadsASlowProbe: on a busy machine the probe took 1.8 to 4.2 s
// to answer; the controllers still read its answers with their default
// timings.
func TestLogSetReadsASlowProbe(t *testing.T) {
	c, ns, probe := setup(t)
	probe.slow(3 * time.Second)
	readyLogSet(t, c, ns, probe)
}

// TestLogSetActsOnTheLastGoodViewWhileItIsRecent: a probe answer missed
// does not stall a rolling restart while the last view read is younger
// than MaxViewAge; an older one is never acted on.
func TestLogSetActsOnTheLastGoodViewWhileItIsRecent(t *testing.T) {
	c, ns, probe := setupWith(t, func(o *matrixone.Options) { o.MaxViewAge = 8 * time.Second })
	readyLogSet(t, c, ns, probe)
	probe.set(nil) // every probe answers 503 from now on

	l := logSet(t, c, ns)
	testenv.Update(t, c, l, func(l *mov1.LogSet) { l.Spec.Config = "[log]\nlevel = \"debug\"\n" })
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet on the new template", func() (bool, string) {
		get(t, c, ns, "log", sts)
		name := sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name
		return name != l.Status.ConfigRevision, name
	})
	sts.Status.ObservedGeneration, sts.Status.UpdateRevision = sts.Generation, "r2"
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one store restarted on the last good view", func() (bool, string) {
		n := countPods(t, c, ns)
		return n == 2, fmt.Sprint(n, " pods")
	})
	// The test brings back the pod that is gone, once it is gone: a pod
	// counted out above may still be terminating (CI once read log-1 then,
	// and brought back log-2, which was there).
	gone := -1
	eventually(t, "the restarted store's pod gone", func() (bool, string) {
		for i := range 3 {
			if !get(t, c, ns, fmt.Sprintf("log-%d", i), &corev1.Pod{}) {
				gone = i
				return true, ""
			}
		}
		return false, "every pod is still there"
	})

	eventually(t, "HAKeeperUnreachable once the last view is older than MaxViewAge", func() (bool, string) {
		got := condition(logSet(t, c, ns), commonv1.ConditionAvailable)
		return strings.HasPrefix(got, "False "+mov1.ReasonHAKeeperUnreachable), got
	})
	runPod(t, c, sts, gone, "r2")
	time.Sleep(2 * time.Second)
	if n := countPods(t, c, ns); n != 3 {
		t.Fatalf("%d pods: a store restarted on a view older than MaxViewAge", n)
	}
	if got := condition(logSet(t, c, ns), framework.ConditionReady); !strings.Contains(got, "no view of HAKeeper") {
		t.Errorf("Ready: %s", got)
	}
}
