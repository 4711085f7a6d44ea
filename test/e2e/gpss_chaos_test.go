//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/test/chaos"
)

// gpssChaosModel is what the chaos run asked of the GpssCluster: the
// actions read it to choose, and settle waits for the cluster to match it.
type gpssChaosModel struct {
	replicas int32
	image    string
	level    string // gpss.json's Logging.BackendLevel
}

// gpssChaosJobsCap bounds the workload: the submitter stops at this many
// acknowledged jobs, so that a long run's flows move a bounded number.
const gpssChaosJobsCap = 120

// gpssChaos attacks one GpssCluster (its managed etcd under Retain, the
// default) with a seeded run while a client submits and starts a job every
// 10 s through the gRPC Service: scaling between 2, 3 and 4 instances, image
// changes between the simulator's 1.0 and 1.1, gpss.json changes, deletion
// and re-creation, each at times with a fault in the middle of its flow,
// and faults on their own (operator replicas killed or deleted, instances
// and the etcd killed, frozen or cut off, the API server restarted). After
// every step the cluster must be Ready as asked within 5 minutes, the
// client's jobs go on being acknowledged, every acknowledged job run on
// exactly one instance, no job on two, and the etcd's volume claim stay.
// The instances are Steward's GPSS simulator, not GPSS.
func gpssChaos(t *testing.T, _ specInput, cfg chaosConfig) {
	g := &gpssScenario{scenario: newScenario(t, "gpss-chaos", "gpsscluster", gpssName, "instance"),
		image: "localhost/gpss-simulator:1.0", next: "localhost/gpss-simulator:1.1"}
	m := &gpssChaosModel{replicas: 3, image: g.image, level: "info"}
	sizedStorageClass(t)
	g.chaosApply(t, m)
	g.waitReady(m.replicas, 3*time.Minute)
	g.startClient()
	w := g.startSubmitter()
	defer w.stop()
	const etcdClaim = "data-" + gpssName + "-etcd-0"

	faults := append(append(append(operatorFaults(t),
		podFaults(g.ns, "instance", func() []string { return ordinals(gpssName, int(m.replicas)) })...),
		podFaults(g.ns, "etcd", func() []string { return ordinals(gpssName+"-etcd", 1) })...),
		fillVolumeFault(g.ns, "etcd"), restartAPIServerFault)
	withFault := midFlow(faults)
	operations := []chaos.Action{
		{Name: "scale", Weight: 3, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.replicas = chaos.OneOf(r, slices.DeleteFunc([]int32{2, 3, 4}, func(n int32) bool { return n == m.replicas })...)
			if err := g.chaosPatch(fmt.Sprintf(`{"spec":{"replicas":%d}}`, m.replicas)); err != nil {
				return "", err
			}
			return withFault(ctx, r, fmt.Sprintf("to %d instances", m.replicas))
		}},
		{Name: "reconfigure", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.level = chaos.OneOf(r, slices.DeleteFunc([]string{"info", "debug", "warn"}, func(l string) bool { return l == m.level })...)
			if err := g.chaosPatch(fmt.Sprintf(`{"spec":{"config":{"Logging":{"BackendLevel":%q}}}}`, m.level)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "BackendLevel "+m.level)
		}},
		{Name: "change-image", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.image = map[bool]string{true: g.next, false: g.image}[m.image == g.image]
			if err := g.chaosPatch(fmt.Sprintf(`{"spec":{"image":%q}}`, m.image)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "to "+m.image)
		}},
		{Name: "delete-and-recreate", Weight: 1, Run: func(context.Context, *rand.Rand) (string, error) {
			return g.chaosRecreate(t, m)
		}},
	}
	settle := func(context.Context) error {
		return holdsFor(5*time.Minute, chaosSettledFor, func(ctx context.Context) error {
			gc, err := g.ready(ctx, m.replicas)
			if err == nil && gc.Status.CurrentImage != m.image {
				err = fmt.Errorf("image %s, want %s", gc.Status.CurrentImage, m.image)
			}
			if err == nil {
				err = podsReady(ctx, g.ns, "app.kubernetes.io/component=instance", int(m.replicas))
			}
			return err
		})
	}
	check := func(context.Context) error {
		if err := w.progress(); err != nil {
			return err
		}
		if err := g.placed(m.replicas, w.ackedJobs()); err != nil {
			return err
		}
		if out, err := kubectl("get", "pvc", etcdClaim, "-n", g.ns, "-o", "name"); err != nil {
			return fmt.Errorf("the etcd's volume claim %s is gone under reclaimPolicy Retain: %w: %s", etcdClaim, err, out)
		}
		t.Logf("Invariants: %d acknowledged jobs each run on exactly one of %d instances, no job on two; %s stays", len(w.ackedJobs()), m.replicas, etcdClaim)
		return nil
	}
	// GPSS's job counts follow the submitter's jobs.
	quiet := quietSpec{ns: g.ns, gv: gpssv1.GroupVersion, workload: []string{"status.jobs"}}
	cfg.run(t, append(operations, faults...), settle, check, quiet, func() { g.dumpState(); g.dumpOperatorLogs() })
}

// chaosApply applies the GpssCluster the model describes.
func (g *gpssScenario) chaosApply(t *testing.T, m *gpssChaosModel) {
	if out, err := kubectlStdin(fmt.Sprintf(`apiVersion: gpss.steward.dev/v1alpha1
kind: GpssCluster
metadata: {name: %s, namespace: %s}
spec:
  replicas: %d
  image: %s
  imagePullPolicy: Never
  clusterID: chaos
  config: {Logging: {BackendLevel: %s}}
  etcd: {managed: {storage: {size: 256Mi, storageClassName: %s}}}
  resources: {limits: {memory: 64Mi}}
`, gpssName, g.ns, m.replicas, m.image, m.level, chaosSizedClass), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}

// ready reads the cluster and says why it is not Ready at its generation
// with replicas ready instances and no flow running.
func (g *gpssScenario) ready(ctx context.Context, replicas int32) (*gpssv1.GpssCluster, error) {
	gc := &gpssv1.GpssCluster{}
	if err := g.c.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: g.name}, gc); err != nil {
		return nil, err
	}
	if err := settled(gc.Generation, &gc.Status.StatusCore); err != nil {
		return nil, err
	}
	if gc.Status.ReadyReplicas != replicas {
		return nil, fmt.Errorf("ready replicas %d, want %d", gc.Status.ReadyReplicas, replicas)
	}
	return gc, nil
}

// chaosRecreate deletes the cluster, waits until it and its pods are
// gone, and applies it again as the model says: under Retain its etcd
// finds its volume, and with it every job.
func (g *gpssScenario) chaosRecreate(t *testing.T, m *gpssChaosModel) (string, error) {
	if out, err := kubectl("delete", "gpsscluster", gpssName, "-n", g.ns, "--wait=false"); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	if err := waitFor(3*time.Minute, func(context.Context) error {
		out, err := kubectl("get", "gpsscluster,pods", "-n", g.ns, "-l", "app.kubernetes.io/instance="+gpssName, "-o", "name")
		if err == nil && strings.TrimSpace(out) != "" {
			err = fmt.Errorf("left: %s", strings.Join(strings.Fields(out), " "))
		}
		if err == nil {
			out, err = kubectl("get", "gpsscluster", gpssName, "-n", g.ns, "-o", "name", "--ignore-not-found")
			if err == nil && strings.TrimSpace(out) != "" {
				err = errors.New("the GpssCluster is still there")
			}
		}
		return err
	}); err != nil {
		return "", fmt.Errorf("deleting: %w", err)
	}
	g.chaosApply(t, m)
	return fmt.Sprintf("deleted and re-created with %d instances", m.replicas), nil
}

// placed waits up to 2 minutes until every acknowledged job runs, served
// by exactly one of the instances' gpfdist Services; a job served by two
// is a violation at once (an instance resumes only its own jobs, so no
// moment of a move or a loss has two).
func (g *gpssScenario) placed(instances int32, acked []string) error {
	var twice error
	err := waitFor(2*time.Minute, func(context.Context) error {
		jobs, err := g.placement(instances)
		if err != nil {
			return err
		}
		for name, j := range jobs {
			if j.serving > 1 {
				twice = fmt.Errorf("job %s runs on %d instances", name, j.serving)
				return nil
			}
		}
		for _, name := range acked {
			if j, ok := jobs[name]; !ok || j.status != "JOB_RUNNING" || j.serving != 1 {
				return fmt.Errorf("acknowledged job %s: %+v (listed: %t)", name, j, ok)
			}
		}
		return nil
	})
	if twice != nil {
		return twice
	}
	return err
}

// gpssPlacement is one job's status and how many instances serve it.
type gpssPlacement struct {
	status  string
	serving int
}

// placement lists every job through the gRPC Service with how many of the
// instances' gpfdist Services serve it, in one call from the client pod.
func (g *gpssScenario) placement(instances int32) (map[string]gpssPlacement, error) {
	args := []string{"placement"}
	for _, pod := range ordinals(gpssName, int(instances)) {
		args = append(args, pod+"-gpfdist:8080")
	}
	out, err := g.gpssOut(args...)
	if err != nil {
		return nil, err
	}
	jobs := map[string]gpssPlacement{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("placement line %q: %w", line, err)
		}
		jobs[f[0]] = gpssPlacement{status: f[1], serving: n}
	}
	return jobs, nil
}

// gpssSubmitter submits and starts a new job every 10 s, as gpsscli would,
// and records those whose submit and start both succeeded: those must run
// from then on.
type gpssSubmitter struct {
	g      *gpssScenario
	mu     sync.Mutex
	acked  []string
	seen   int // acknowledged jobs at the last progress check
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *gpssScenario) startSubmitter() *gpssSubmitter {
	ctx, cancel := context.WithCancel(context.Background())
	w := &gpssSubmitter{g: g, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			if len(w.ackedJobs()) < gpssChaosJobsCap {
				name := fmt.Sprintf("c%03d", i)
				if _, err := g.gpssOut("submit", name); err == nil {
					if _, err := g.gpssOut("start", name); err == nil {
						w.mu.Lock()
						w.acked = append(w.acked, name)
						w.mu.Unlock()
					}
				}
			}
			sleep(ctx, 10*time.Second)
		}
	}()
	return w
}

func (w *gpssSubmitter) ackedJobs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

// progress waits up to a minute for a job acknowledged since the last
// check, unless the submitter has reached its cap.
func (w *gpssSubmitter) progress() error {
	err := waitFor(time.Minute, func(context.Context) error {
		n := len(w.ackedJobs())
		if n > w.seen || n >= gpssChaosJobsCap {
			w.seen = n
			return nil
		}
		return fmt.Errorf("%d jobs acknowledged, none since the last check", n)
	})
	if err != nil {
		return errors.New("the client's submissions stopped: " + err.Error())
	}
	return nil
}

func (w *gpssSubmitter) stop() {
	w.cancel()
	<-w.done
}
