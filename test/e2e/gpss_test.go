//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/systems"
)

// gpssName is the GpssCluster the lifecycle works on.
const gpssName = "gpss"

// GPSS's specs. GPSS cannot run here: the instances are Steward's GPSS
// simulator (images/gpss-simulator, which is not GPSS) on a real etcd
// (images/gpss-etcd, the upstream etcd).
func init() {
	registerSystem(systems.GPSS, systemSpec{
		addToScheme: gpssv1.AddToScheme,
		smoke:       gpssSmoke,
		specs:       []spec{{"lifecycle", gpssLifecycleSpec}},
		chaos:       gpssChaos,
	})
}

// gpssSmoke is GPSS's smoke: one instance on a managed etcd Ready, a job
// submitted through the gRPC Service and listed, deleted.
var gpssSmoke = smokeSpec{
	resource: "gpsscluster", name: gpssName, ready: 3 * time.Minute,
	manifest: func(t *testing.T, in specInput, ns string) string {
		return fmt.Sprintf(`apiVersion: gpss.steward.dev/v1alpha1
kind: GpssCluster
metadata: {name: %s, namespace: %s}
spec:
  replicas: 1
  image: %s
  imagePullPolicy: Never
  clusterID: smoke
  etcd: {managed: {storage: {size: 64Mi, reclaimPolicy: Delete}}}
  resources: {limits: {memory: 64Mi}}
`, gpssName, ns, in.image(t, "gpss-simulator"))
	},
	request: func(ns string) error {
		gpss := []string{"/smoke", "gpss", "--timeout", "20s", "--server", gpssName + "-grpc:5000"}
		// A retry after a submit whose answer was lost finds the job.
		if out, err := execIn(ns, "client", append(gpss, "list")...); err == nil && strings.Contains(out, "smoke") {
			return nil
		}
		if _, err := execIn(ns, "client", append(gpss, "submit", "smoke")...); err != nil {
			return err
		}
		out, err := execIn(ns, "client", append(gpss, "list")...)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "smoke") {
			return fmt.Errorf("the submitted job is not listed: %s", out)
		}
		return nil
	},
}

// gpssJobs are the jobs the lifecycle keeps running throughout.
var gpssJobs = []string{"orders", "clicks", "payments", "audit", "events"}

// gpssLifecycleSpec runs a GpssCluster through its life with jobs running:
// creation with a managed etcd, jobs submitted and started through the
// gRPC Service as gpsscli would, scaling 3→5→2 (every job running on
// exactly one instance after each), an upgrade to a new image tag and the
// rollback, a gpss.json change rolled to every instance, a broken image that halts the rollout and is rolled back, an
// instance killed, a second cluster with the same clusterID refused, a
// cluster on an unreachable etcd not Ready until its address is corrected,
// the etcd's volumes grown with the jobs running, and deletion. The scenarios build on each other and run in order; the first
// failure stops the rest.
func gpssLifecycleSpec(t *testing.T, in specInput) {
	installOperator(t)
	g := &gpssScenario{scenario: newScenario(t, "gpss", "gpsscluster", gpssName, "instance"),
		image: "localhost/gpss-simulator:1.0", next: "localhost/gpss-simulator:1.1",
		broken: in.image(t, "gpss-simulator-broken")}
	for _, s := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"create", g.create},
		{"jobs", g.jobs},
		{"scale 3 to 5 to 2", g.scale},
		{"upgrade and roll back", g.upgrade},
		{"a config change reaches every instance", g.configChange},
		{"a broken image halts and is rolled back", g.brokenImage},
		{"a killed instance comes back", g.heal},
		{"a taken clusterID is refused", g.takenClusterID},
		{"an unreachable etcd is not Ready, and corrected it recovers", g.wrongEtcd},
		{"the etcd's volumes grow, the jobs keep running", g.volumesGrow},
		{"delete", g.delete},
	} {
		ok := t.Run(s.name, func(t *testing.T) {
			g.t = t
			s.run(t)
		})
		if !ok {
			g.t = t
			g.dumpState()
			return
		}
	}
}

type gpssScenario struct {
	scenario
	image, next, broken string
}

func (g *gpssScenario) create(t *testing.T) {
	manifest := fmt.Sprintf(`apiVersion: gpss.steward.dev/v1alpha1
kind: GpssCluster
metadata:
  name: %s
  namespace: %s
spec:
  replicas: 3
  image: %s
  imagePullPolicy: Never
  clusterID: orders
  rolloutHaltSeconds: 20
  config:
    Logging:
      BackendLevel: info
  etcd:
    managed:
      storage:
        size: 64Mi
  resources:
    limits:
      memory: 64Mi
`, gpssName, g.ns, g.image)
	start := time.Now()
	if out, err := kubectlStdin(manifest, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	// The etcd's image is the API's default, which images/gpss-etcd built.
	st := g.waitReady(3, 3*time.Minute).Status
	t.Logf("Ready with 3 instances after %s", time.Since(start).Round(time.Second))
	if st.CurrentImage != g.image || len(st.EtcdEndpoints) != 1 || !strings.HasPrefix(st.GRPCEndpoint, gpssName+"-grpc.") {
		errorf(t, "status: %+v", st)
	}
	g.startClient()
}

// jobs submits and starts the jobs through the gRPC Service, from a pod,
// as gpsscli would.
func (g *gpssScenario) jobs(*testing.T) {
	g.gpss(append([]string{"submit"}, gpssJobs...)...)
	g.gpss(append([]string{"start"}, gpssJobs...)...)
	g.allRunningOnce(3)
}

// scale scales out and in with the jobs running: after each, every job
// runs, on exactly one instance, and the departed instances' gpfdist
// Services are gone.
func (g *gpssScenario) scale(t *testing.T) {
	for _, n := range []int32{5, 2} {
		start := time.Now()
		g.patch(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		g.waitReady(n, 3*time.Minute)
		g.waitPods(int(n))
		t.Logf("Scaled to %d in %s", n, time.Since(start).Round(time.Second))
		g.allRunningOnce(int(n))
		eventually(t, time.Minute, "the gpfdist Services follow the instances", func(ctx context.Context) error {
			svcs, err := env.client.CoreV1().Services(g.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=gpfdist"})
			if err != nil {
				return err
			}
			if len(svcs.Items) != int(n) {
				return fmt.Errorf("%d gpfdist Services", len(svcs.Items))
			}
			return nil
		})
	}
}

// upgrade moves to a new tag and back, one instance at a time. After each,
// every instance reports its tag's version (each of the simulator's images
// says its own): the new version runs, not only the pods name its image.
func (g *gpssScenario) upgrade(t *testing.T) {
	for _, image := range []string{g.next, g.image} {
		start := time.Now()
		g.patch(fmt.Sprintf(`{"spec":{"image":%q}}`, image))
		st := g.waitReady(2, 3*time.Minute).Status
		if st.CurrentImage != image {
			errorf(t, "currentImage %q, want %q", st.CurrentImage, image)
		}
		t.Logf("Rolled to %s in %s (previous %s)", image, time.Since(start).Round(time.Second), st.PreviousImage)
		g.allRunningOnce(2)
		g.instancesRun(2, imageVersion(image))
	}
}

// instancesRun checks that each of the first n instances runs version, as a
// user would check it: the serving process logged it when it started to
// serve, and the instance's binary says it to --version (gpss --version).
func (g *gpssScenario) instancesRun(n int, version string) {
	g.t.Helper()
	serving := regexp.MustCompile(`msg=Serving .*version=(\S+)`)
	for i := range n {
		pod := fmt.Sprintf("%s-%d", gpssName, i)
		eventually(g.t, 30*time.Second, pod+" reports version "+version, func(context.Context) error {
			out, err := kubectl("exec", "-n", g.ns, pod, "--", "/gpss-simulator", "--version")
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			if got, want := strings.TrimSpace(out), "gpss-simulator "+version; got != want {
				return fmt.Errorf("--version says %q, want %q", got, want)
			}
			logs, err := kubectl("logs", "-n", g.ns, pod)
			if err != nil {
				return fmt.Errorf("%w: %s", err, logs)
			}
			m := serving.FindAllStringSubmatch(logs, -1)
			if len(m) == 0 {
				return fmt.Errorf("its log has no Serving line yet:\n%s", logs)
			}
			if got := m[len(m)-1][1]; got != version {
				return fmt.Errorf("the serving process logged version %q, want %q", got, version)
			}
			return nil
		})
	}
}

// imageVersion is the version an image reference's tag names
// (localhost/gpss-simulator:1.1 is 1.1).
func imageVersion(ref string) string {
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return "latest"
}

// configChange changes gpss.json: every instance is restarted onto the new
// ConfigMap, one at a time, with the jobs running after, and
// status.configRevision names it only then.
func (g *gpssScenario) configChange(t *testing.T) {
	before := g.get().Status.ConfigRevision
	uids := map[string]types.UID{}
	for i := range 2 {
		pod, err := env.client.CoreV1().Pods(g.ns).Get(context.Background(), fmt.Sprintf("%s-%d", gpssName, i), metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		uids[pod.Name] = pod.UID
	}
	start := time.Now()
	g.patch(`{"spec":{"config":{"Logging":{"BackendLevel":"debug"}}}}`)
	st := g.waitReady(2, 3*time.Minute).Status
	t.Logf("gpss.json rolled out in %s: %s → %s", time.Since(start).Round(time.Second), before, st.ConfigRevision)
	if st.ConfigRevision == before {
		errorf(t, "status.configRevision stayed %s", before)
	}
	for name, uid := range uids {
		pod, err := env.client.CoreV1().Pods(g.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			fatalNow(t, err)
		}
		if pod.UID == uid {
			errorf(t, "%s was not restarted", name)
		}
		if got := pod.Annotations["gpss.steward.dev/config-revision"]; got != st.ConfigRevision {
			errorf(t, "%s runs %s, status.configRevision says %s", name, got, st.ConfigRevision)
		}
	}
	g.allRunningOnce(2)
}

// brokenImage sets an image whose instances never start: the rollout halts on
// the first instance and says so, the other keeps serving; setting the
// image back rolls the crash-looping instance back.
func (g *gpssScenario) brokenImage(t *testing.T) {
	g.patch(fmt.Sprintf(`{"spec":{"image":%q}}`, g.broken))
	eventually(t, 2*time.Minute, "the rollout halts", func(context.Context) error {
		ready := meta.FindStatusCondition(g.get().Status.Conditions, "Ready")
		if ready == nil || ready.Reason != "RolloutHalted" {
			return fmt.Errorf("Ready: %+v", ready)
		}
		return nil
	})
	st := g.get().Status
	t.Logf("Halted: %s", meta.FindStatusCondition(st.Conditions, "Ready").Message)
	onBroken := 0
	for _, in := range st.Instances {
		if in.Image == g.broken {
			onBroken++
		}
	}
	if onBroken != 1 || st.CurrentImage != g.image {
		errorf(t, "%d instances on the broken image (want 1), currentImage %q", onBroken, st.CurrentImage)
	}
	g.patch(fmt.Sprintf(`{"spec":{"image":%q}}`, g.image))
	g.waitReady(2, 3*time.Minute)
	g.allRunningOnce(2)
}

// heal deletes an instance's pod: it comes back under its name, behind the
// same gpfdist Service, and runs its jobs again.
func (g *gpssScenario) heal(t *testing.T) {
	svc, err := env.client.CoreV1().Services(g.ns).Get(context.Background(), gpssName+"-1-gpfdist", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	old, err := env.client.CoreV1().Pods(g.ns).Get(context.Background(), gpssName+"-1", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	start := time.Now()
	if out, err := kubectl("delete", "pod", "-n", g.ns, gpssName+"-1", "--wait=false"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	// By UID: a creation timestamp has whole seconds, and the StatefulSet
	// may re-create the pod within the second of the delete.
	eventually(t, 2*time.Minute, "the pod is re-created", func(ctx context.Context) error {
		pod, err := env.client.CoreV1().Pods(g.ns).Get(ctx, gpssName+"-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.UID == old.UID {
			return fmt.Errorf("not re-created yet")
		}
		return nil
	})
	g.waitReady(2, 2*time.Minute)
	g.allRunningOnce(2)
	t.Logf("Healed in %s", time.Since(start).Round(time.Second))
	after, err := env.client.CoreV1().Services(g.ns).Get(context.Background(), gpssName+"-1-gpfdist", metav1.GetOptions{})
	if err != nil || after.UID != svc.UID {
		errorf(t, "the instance's gpfdist Service changed: %v", err)
	}
}

// takenClusterID creates a second cluster with the first one's clusterID.
func (g *gpssScenario) takenClusterID(t *testing.T) {
	out, err := kubectlStdin(fmt.Sprintf(`apiVersion: gpss.steward.dev/v1alpha1
kind: GpssCluster
metadata:
  name: second
  namespace: %s
spec:
  image: %s
  clusterID: orders
`, g.ns, g.image), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, `spec.clusterID: Duplicate value: "orders (GpssCluster gpss uses it)"`) {
		errorf(t, "a second cluster with clusterID orders: %v: %s", err, out)
	}
}

// wrongEtcd creates a second cluster pointed at an etcd that does not
// answer (the pod's own loopback): its instance must not be Ready (it does
// not answer ListJobs), and the cluster says which instance and why; then
// spec.etcd.endpoints is corrected to the first cluster's etcd, which
// rolls the instance onto it, and the cluster becomes Ready.
func (g *gpssScenario) wrongEtcd(t *testing.T) {
	const name = "lost"
	apply := func(endpoint string) {
		out, err := kubectlStdin(fmt.Sprintf(`apiVersion: gpss.steward.dev/v1alpha1
kind: GpssCluster
metadata:
  name: %s
  namespace: %s
spec:
  replicas: 1
  image: %s
  imagePullPolicy: Never
  clusterID: lost
  etcd:
    endpoints: [%q]
  resources:
    limits:
      memory: 64Mi
`, name, g.ns, g.image, endpoint), "apply", "-f", "-")
		if err != nil {
			fatalf(t, "%v: %s", err, out)
		}
	}
	lost := func() *gpssv1.GpssCluster {
		gc := &gpssv1.GpssCluster{}
		if err := g.c.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: name}, gc); err != nil {
			fatalNow(t, err)
		}
		return gc
	}
	apply("http://127.0.0.1:2379")
	var why string
	eventually(t, 2*time.Minute, "the cluster says its instance does not serve", func(context.Context) error {
		ready := meta.FindStatusCondition(lost().Status.Conditions, "Ready")
		if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, name+"-0 is not ready") {
			return fmt.Errorf("Ready: %+v", ready)
		}
		why = ready.Message
		return nil
	})
	t.Logf("With an unreachable etcd: %s", why)
	// It must stay so: the instance's port accepts connections, but it
	// answers nothing without its etcd.
	for range 10 {
		time.Sleep(2 * time.Second)
		if ready := meta.FindStatusCondition(lost().Status.Conditions, "Ready"); ready == nil || ready.Status == metav1.ConditionTrue {
			fatalf(t, "Ready with an unreachable etcd: %+v", ready)
		}
	}

	start := time.Now()
	apply(g.get().Status.EtcdEndpoints[0])
	eventually(t, 3*time.Minute, "Ready on the corrected etcd", func(context.Context) error {
		gc := lost()
		if err := settled(gc.Generation, &gc.Status.StatusCore); err != nil {
			return err
		}
		if gc.Status.ReadyReplicas != 1 {
			return fmt.Errorf("ready replicas %d", gc.Status.ReadyReplicas)
		}
		return nil
	})
	t.Logf("Ready %s after the etcd's address was corrected", time.Since(start).Round(time.Second))
	if out, err := kubectl("delete", "gpsscluster", name, "-n", g.ns, "--wait=true", "--timeout=2m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}

// volumesGrow grows the managed etcd's volumes (scenario.volumesGrow)
// with the jobs running: neither the etcd's members nor the instances
// restart, and every job still runs on exactly one instance.
func (g *gpssScenario) volumesGrow(t *testing.T) {
	instances := g.get().Spec.Replicas
	g.scenario.volumesGrow(t, volumeGrowth{
		sizePatch: func(size string) string {
			return fmt.Sprintf(`{"spec":{"etcd":{"managed":{"storage":{"size":%q}}}}}`, size)
		},
		smaller:   "32Mi",
		larger:    "128Mi",
		selector:  instanceSelector("gpss", gpssName),
		waitReady: func() { g.waitReady(instances, 2*time.Minute) },
	})
	g.allRunningOnce(int(instances))
}

// delete deletes the cluster: its children go, the etcd's volume stays
// (reclaimPolicy Retain, the default).
func (g *gpssScenario) delete(t *testing.T) {
	if out, err := kubectl("delete", "gpsscluster", gpssName, "-n", g.ns, "--wait=true", "--timeout=2m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 2*time.Minute, "the children go", func(context.Context) error {
		out, err := kubectl("get", "statefulsets,services,configmaps,pods", "-n", g.ns, "-l", "app.kubernetes.io/instance="+gpssName, "-o", "name")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("left: %s", out)
		}
		return nil
	})
	out, err := kubectl("get", "pvc", "-n", g.ns, "-o", "name")
	if err != nil || !strings.Contains(out, "data-"+gpssName+"-etcd-0") {
		errorf(t, "the etcd's volume claim did not stay (reclaimPolicy Retain): %v %s", err, out)
	}
}

// allRunningOnce checks, through the gRPC Service, that every job runs,
// and through the instances' gpfdist Services, that exactly one instance
// serves each.
func (g *gpssScenario) allRunningOnce(instances int) {
	g.t.Helper()
	var addrs []string
	for i := range instances {
		addrs = append(addrs, fmt.Sprintf("%s-%d-gpfdist:8080", gpssName, i))
	}
	eventually(g.t, 2*time.Minute, "every job runs on exactly one instance", func(context.Context) error {
		out, err := g.gpssOut("list")
		if err != nil {
			return err
		}
		var want []string
		for _, j := range gpssJobs {
			want = append(want, j+" JOB_RUNNING")
		}
		slices.Sort(want)
		if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
			return fmt.Errorf("jobs: %q", got)
		}
		for _, j := range gpssJobs {
			out, err := kubectl(append([]string{"exec", "-n", g.ns, "client", "--", "/smoke", "gpss", "serving", j}, addrs...)...)
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			if n, _ := strconv.Atoi(strings.TrimSpace(out)); n != 1 {
				return fmt.Errorf("%d instances serve %s on gpfdist", n, j)
			}
		}
		return nil
	})
}

func (g *gpssScenario) gpss(args ...string) {
	g.t.Helper()
	if out, err := g.gpssOut(args...); err != nil {
		fatalNow(g.t, err, out)
	}
}

func (g *gpssScenario) gpssOut(args ...string) (string, error) {
	cmd := append([]string{"exec", "-n", g.ns, "client", "--", "/smoke", "gpss", "--timeout", "60s",
		"--server", gpssName + "-grpc:5000"}, args...)
	out, err := kubectl(cmd...)
	if err != nil {
		return out, fmt.Errorf("gpss %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// waitReady waits until the cluster is Ready at its generation with
// replicas ready instances and no operation running.
func (g *gpssScenario) waitReady(replicas int32, timeout time.Duration) *gpssv1.GpssCluster {
	g.t.Helper()
	var gc *gpssv1.GpssCluster
	eventually(g.t, timeout, fmt.Sprintf("the cluster is Ready with %d instances", replicas), func(ctx context.Context) error {
		var err error
		gc, err = g.ready(ctx, replicas)
		return err
	})
	return gc
}

func (g *gpssScenario) get() *gpssv1.GpssCluster {
	gc := &gpssv1.GpssCluster{}
	g.getInto(gc)
	return gc
}
