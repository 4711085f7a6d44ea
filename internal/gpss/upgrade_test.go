package gpss_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpsstest"
	"github.com/stewardhq/steward/internal/gpss/simulator"
	"github.com/stewardhq/steward/internal/testenv"
)

// statefulSetPlayer plays the StatefulSet controller and the kubelet for
// one StatefulSet: it names the template's revision in the StatefulSet's
// status (the same template, the same revision, as the controller reuses
// a ControllerRevision on a rollback), re-creates a deleted pod from the
// current template labeled with that revision, ready unless its image is
// bad, and records the order of the re-creations.
type statefulSetPlayer struct {
	mu       sync.Mutex
	created  []string // "<pod>@<image>"
	configs  []string // "<pod>@<config ConfigMap>", in the same order
	badImage string
}

func (p *statefulSetPlayer) run(ctx context.Context, c client.Client, ns, name string) {
	for ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		sts := &appsv1.StatefulSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
			continue
		}
		revision := templateRevision(sts)
		if sts.Status.ObservedGeneration != sts.Generation || sts.Status.UpdateRevision != revision {
			sts.Status.ObservedGeneration, sts.Status.UpdateRevision = sts.Generation, revision
			sts.Status.Replicas = *sts.Spec.Replicas
			if err := c.Status().Update(ctx, sts); err != nil {
				continue
			}
		}
		for i := range int(*sts.Spec.Replicas) {
			podName := fmt.Sprintf("%s-%d", name, i)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: podName}, &corev1.Pod{}); err == nil || ctx.Err() != nil {
				continue
			}
			labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
			maps.Copy(labels, sts.Spec.Template.Labels)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, Labels: labels,
				Annotations: sts.Spec.Template.Annotations}, Spec: *sts.Spec.Template.Spec.DeepCopy()}
			if err := c.Create(ctx, pod); err != nil {
				continue
			}
			image := pod.Spec.Containers[0].Image
			status := corev1.ConditionTrue
			if image == p.badImage {
				status = corev1.ConditionFalse
			}
			// The controller sets the pod's serving condition meanwhile:
			// re-read on a conflict, and keep the conditions it set.
			_ = retry.RetryOnConflict(testenv.ConflictBackoff, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
					return err
				}
				pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
					return c.Type == corev1.PodReady || c.Type == corev1.ContainersReady
				})
				pod.Status.Conditions = append(pod.Status.Conditions,
					corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()},
					corev1.PodCondition{Type: corev1.ContainersReady, Status: status, LastTransitionTime: metav1.Now()})
				return c.Status().Update(ctx, pod)
			})
			p.mu.Lock()
			p.created = append(p.created, podName+"@"+image)
			p.configs = append(p.configs, podName+"@"+pod.Annotations[build.ConfigRevisionAnnotation])
			p.mu.Unlock()
		}
	}
}

// templateRevision names a StatefulSet's pod template as its controller
// would: the set's name and a hash of the template.
func templateRevision(sts *appsv1.StatefulSet) string {
	data, err := json.Marshal(sts.Spec.Template)
	if err != nil {
		panic(err)
	}
	return sts.Name + "-" + standard.ConfigHash(map[string]string{"template": string(data)})
}

func (p *statefulSetPlayer) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.created[n:])
}

func (p *statefulSetPlayer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.created)
}

// TestRolloutHaltsAndRollsBack upgrades three instances one at a time,
// then tries an image that never becomes ready: the rollout halts after
// the first instance and says so, and setting the image back rolls that
// instance back.
func TestRolloutHaltsAndRollsBack(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	sim := gpsstest.RunSimulator(t, etcd, "c-up", "up-sim", simulator.Knobs{})
	c, ns := setup(t, through(sim))
	player := &statefulSetPlayer{badImage: "gpss:bad"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); player.run(ctx, c, ns, "up") }()
	t.Cleanup(func() { cancel(); <-done })

	if err := c.Create(t.Context(), newCluster(ns, "up", func(s *gpssv1.GpssClusterSpec) {
		s.Image, s.ClusterID, s.Etcd.Endpoints = "gpss:1", "c-up", []string{etcd}
		s.RolloutHaltSeconds = 2
	})); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "Ready on gpss:1", func() (bool, string) {
		ok, why := ready(cluster(t, c, ns, "up"))
		return ok && cluster(t, c, ns, "up").Status.CurrentImage == "gpss:1", why
	})
	setImage := func(image string) {
		patch := []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, image))
		if err := c.Patch(t.Context(), cluster(t, c, ns, "up"), client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}

	// An upgrade: one instance at a time, the highest ordinal first.
	n := player.count()
	setImage("gpss:2")
	testenv.Eventually(t, "Ready on gpss:2", func() (bool, string) {
		g := cluster(t, c, ns, "up")
		ok, why := ready(g)
		return ok && g.Status.CurrentImage == "gpss:2", why
	})
	if got, want := player.since(n), []string{"up-2@gpss:2", "up-1@gpss:2", "up-0@gpss:2"}; !slices.Equal(got, want) {
		t.Errorf("re-created %v, want %v", got, want)
	}
	if g := cluster(t, c, ns, "up"); g.Status.PreviousImage != "gpss:1" {
		t.Errorf("previousImage %q, want gpss:1", g.Status.PreviousImage)
	}

	// A bad image: the first instance never becomes ready, the rollout
	// halts there and says so.
	n = player.count()
	setImage("gpss:bad")
	testenv.Eventually(t, "the rollout halts", func() (bool, string) {
		cond := meta.FindStatusCondition(cluster(t, c, ns, "up").Status.Conditions, framework.ConditionReady)
		return cond != nil && cond.Reason == commonv1.ReasonRolloutHalted &&
				strings.Contains(cond.Message, "up-2 runs gpss:bad and has not been ready since") &&
				strings.Contains(cond.Message, "set spec.image back to gpss:2"),
			fmt.Sprintf("%+v", cond)
	})
	testenv.Eventually(t, "a Warning Event of the halt", func() (bool, string) {
		var events eventsv1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == commonv1.ReasonRolloutHalted && strings.Contains(e.Note, "up-2 runs gpss:bad") {
				return true, ""
			}
			seen = append(seen, e.Type+"/"+e.Reason)
		}
		return false, fmt.Sprint("events ", seen)
	})
	time.Sleep(2 * time.Second)
	if got := player.since(n); !slices.Equal(got, []string{"up-2@gpss:bad"}) {
		t.Errorf("re-created %v while halted, want only up-2 on gpss:bad", got)
	}
	if g := cluster(t, c, ns, "up"); g.Status.CurrentImage != "gpss:2" {
		t.Errorf("currentImage %q during a halted rollout, want gpss:2", g.Status.CurrentImage)
	}

	// Rolling back restarts the instance that is not ready at once.
	n = player.count()
	setImage("gpss:2")
	testenv.Eventually(t, "Ready on gpss:2 again", func() (bool, string) {
		g := cluster(t, c, ns, "up")
		ok, why := ready(g)
		return ok && g.Status.CurrentImage == "gpss:2", why
	})
	if got := player.since(n); !slices.Equal(got, []string{"up-2@gpss:2"}) {
		t.Errorf("re-created %v rolling back, want only up-2 on gpss:2", got)
	}
	if op := cluster(t, c, ns, "up").Status.Operation; op == nil || op.Name != "rollout" || op.Phase != commonv1.PhaseSucceeded {
		t.Errorf("operation %+v", op)
	}
}

// TestEveryTemplateChangeRolls changes gpss.json, then the resources: each
// change restarts every instance, one at a time, the highest ordinal
// first, and status.configRevision names the new gpss.json only once every
// instance runs it.
func TestEveryTemplateChangeRolls(t *testing.T) {
	etcd := gpsstest.StartEtcd(t)
	sim := gpsstest.RunSimulator(t, etcd, "c-cf", "cf-sim", simulator.Knobs{})
	c, ns := setup(t, through(sim))
	player := &statefulSetPlayer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); player.run(ctx, c, ns, "cf") }()
	t.Cleanup(func() { cancel(); <-done })

	if err := c.Create(t.Context(), newCluster(ns, "cf", func(s *gpssv1.GpssClusterSpec) {
		s.Image, s.ClusterID, s.Etcd.Endpoints = "gpss:1", "c-cf", []string{etcd}
		s.Config = &k8sruntime.RawExtension{Raw: []byte(`{"Logging":{"BackendLevel":"debug"}}`)}
	})); err != nil {
		t.Fatal(err)
	}
	var first string
	testenv.Eventually(t, "Ready with a config revision", func() (bool, string) {
		g := cluster(t, c, ns, "cf")
		ok, why := ready(g)
		first = g.Status.ConfigRevision
		return ok && first != "", why + ", configRevision " + first
	})

	// rolled waits until every instance was re-created once more onto a new
	// config, in the StatefulSet's order, checking on the way that status
	// never names a config some instance does not run.
	rolled := func(what, patch string) string {
		t.Helper()
		n, before := player.count(), cluster(t, c, ns, "cf").Status.ConfigRevision
		if err := c.Patch(t.Context(), cluster(t, c, ns, "cf"), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		var now, lie string
		testenv.Eventually(t, what+" rolled out", func() (bool, string) {
			g := cluster(t, c, ns, "cf")
			now = g.Status.ConfigRevision
			for _, name := range []string{"cf-0", "cf-1", "cf-2"} {
				pod := &corev1.Pod{}
				if now != before && lie == "" && exists(t, c, ns, name, pod) && pod.Annotations[build.ConfigRevisionAnnotation] != now {
					lie = fmt.Sprintf("status.configRevision is %s while %s runs %s", now, name, pod.Annotations[build.ConfigRevisionAnnotation])
					t.Error(lie)
				}
			}
			ok, why := ready(g)
			return ok && len(player.since(n)) == 3, fmt.Sprintf("%s; re-created %v", why, player.since(n))
		})
		if got := player.since(n); !slices.Equal(got, []string{"cf-2@gpss:1", "cf-1@gpss:1", "cf-0@gpss:1"}) {
			t.Errorf("%s: re-created %v, want cf-2, cf-1, cf-0 one at a time", what, got)
		}
		return now
	}
	second := rolled("a gpss.json change", `{"spec":{"config":{"Logging":{"BackendLevel":"info"}}}}`)
	if second == first {
		t.Errorf("status.configRevision stayed %s after gpss.json changed", first)
	}
	player.mu.Lock()
	configs := slices.Clone(player.configs[len(player.configs)-3:])
	player.mu.Unlock()
	for _, got := range configs {
		if !strings.HasSuffix(got, "@"+second) {
			t.Errorf("an instance was re-created as %s, want the config %s", got, second)
		}
	}
	if third := rolled("a resources change", `{"spec":{"resources":{"limits":{"cpu":"2"}}}}`); third != second {
		t.Errorf("status.configRevision moved to %s on a resources change, want %s", third, second)
	}
	if op := cluster(t, c, ns, "cf").Status.Operation; op == nil || op.Name != "rollout" || op.Phase != commonv1.PhaseSucceeded {
		t.Errorf("operation %+v", op)
	}
}
