//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/test/chaos"
	"github.com/stewardhq/steward/test/zkcheck"
)

// zkChaosModel is what the chaos run asked of the ZookeeperCluster: the
// actions read it to choose (never the cluster's state, so that a seed
// replays), and settle waits for the cluster to match it.
type zkChaosModel struct {
	replicas int32
	image    string
	tickTime string // "": ZooKeeper's default
}

// zookeeperChaos attacks one ZookeeperCluster (Retain, a client writing
// znodes throughout) with a seeded run: scaling 3↔5, configuration and
// image changes, deletion and re-creation, each at times with a fault in
// the middle of the flow it starts, and faults on their own (operator
// replicas killed or deleted, servers killed, frozen or cut off, the API
// server restarted). After every step the cluster must be Ready as asked
// within 5 minutes, the client's writes go on, every acknowledged znode be
// stored, and no volume claim the cluster had be gone.
func zookeeperChaos(t *testing.T, in specInput, cfg chaosConfig) {
	z := &zkScenario{scenario: newScenario(t, "zk-chaos", "zk", zkName, "server"), image: in.image(t, systems.ZooKeeper),
		storageClass: sizedStorageClass(t), storageSize: ptr.To(resource.MustParse("256Mi"))}
	other := strings.Split(z.image, ":")[0] + ":e2e-chaos"
	if out, err := ctr("images", "tag", "--force", z.image, other); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	m := &zkChaosModel{replicas: 3, image: z.image}
	z.createWith(t, m.replicas)
	claims := map[string]bool{}
	for _, c := range z.claims() {
		claims[c] = true
	}
	faults := append(append(operatorFaults(t), podFaults(z.ns, "server", func() []string { return ordinals(zkName, int(m.replicas)) })...),
		fillVolumeFault(z.ns, "server"), restartAPIServerFault)
	withFault := midFlow(faults)
	operations := []chaos.Action{
		{Name: "scale", Weight: 3, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.replicas = 8 - m.replicas // 3 and 5
			if err := z.chaosPatch(fmt.Sprintf(`{"spec":{"replicas":%d}}`, m.replicas)); err != nil {
				return "", err
			}
			return withFault(ctx, r, fmt.Sprintf("to %d servers", m.replicas))
		}},
		{Name: "reconfigure", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			next := chaos.OneOf(r, slices.DeleteFunc([]string{"1800", "1900", "2000", "2100"}, func(v string) bool { return v == m.tickTime })...)
			m.tickTime = next
			if err := z.chaosPatch(fmt.Sprintf(`{"spec":{"config":{"tickTime":%q}}}`, next)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "tickTime "+next)
		}},
		{Name: "change-image", Weight: 1, Run: func(ctx context.Context, r *rand.Rand) (string, error) {
			m.image = map[bool]string{true: other, false: z.image}[m.image == z.image]
			if err := z.chaosPatch(fmt.Sprintf(`{"spec":{"image":%q}}`, m.image)); err != nil {
				return "", err
			}
			return withFault(ctx, r, "to "+m.image)
		}},
		{Name: "delete-and-recreate", Weight: 1, Run: func(ctx context.Context, _ *rand.Rand) (string, error) {
			return z.chaosRecreate(ctx, m)
		}},
	}
	settle := func(context.Context) error {
		return holdsFor(5*time.Minute, chaosSettledFor, func(ctx context.Context) error {
			zk, err := z.ready(ctx, m.replicas)
			if err == nil && zk.Status.CurrentImage != m.image {
				err = fmt.Errorf("image %s, want %s", zk.Status.CurrentImage, m.image)
			}
			if err == nil {
				err = podsReady(ctx, z.ns, "app.kubernetes.io/component=server", int(m.replicas))
			}
			return err
		})
	}
	quorum := startQuorumWatch(z.ns, "app.kubernetes.io/component=server", z.votingPods)
	check := func(context.Context) error {
		if err := quorum.err(); err != nil {
			return err
		}
		if err := z.chaosProgress(); err != nil {
			return err
		}
		acked, err := z.ackedWrites()
		if err != nil {
			return err
		}
		// On every server, each synced with the leader first: a client
		// may be connected to any of them, and a server whose tree lacks
		// what the ensemble acknowledged serves that loss to its clients
		// (and, once it leads, to every client).
		for _, server := range ordinals(zkName, int(m.replicas)) {
			stored, err := z.storedWritesOn(server)
			if err != nil {
				return err
			}
			var missing []int
			for _, n := range acked {
				if !stored[n] {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s lacks %d of %d acknowledged writes, the first %v, the last %d (it holds %d znodes; every server: %s)",
					server, len(missing), len(acked), missing[:min(len(missing), 10)], missing[len(missing)-1], len(stored), z.serverStats())
			}
		}
		now := z.claims()
		for c := range claims {
			if !slices.Contains(now, c) {
				return fmt.Errorf("volume claim %s is gone under reclaimPolicy Retain", c)
			}
		}
		for _, c := range now {
			claims[c] = true
		}
		t.Logf("Invariants: %d acknowledged writes stored on each of the %d servers; volume claims %v", len(acked), m.replicas, now)
		return nil
	}
	// A server's last zxid follows the client's writes.
	quiet := quietSpec{ns: z.ns, gv: zkv1.GroupVersion, workload: []string{"status.servers.*.*.lastZxid"}}
	cfg.run(t, append(operations, faults...), settle, check, quiet, func() { z.dumpState(); t.Logf("Servers: %s", z.serverStats()); z.dumpOperatorLogs() })
	t.Logf("Quorum: %d departures of a serving member not the suite's own checked, none while it was needed", quorum.close())
}

// votingPods are the pods of the servers the ensemble's committed
// configuration holds, as the cluster's status says (ZooKeeper's own
// voting view, from the servers); nil while the cluster is being deleted.
func (z *zkScenario) votingPods(ctx context.Context) ([]string, error) {
	var zk zkv1.ZookeeperCluster
	if err := z.c.Get(ctx, client.ObjectKey{Namespace: z.ns, Name: z.name}, &zk); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if zk.DeletionTimestamp != nil {
		return nil, nil
	}
	pods := make([]string, 0, len(zk.Status.Members))
	for _, id := range zk.Status.Members {
		pods = append(pods, fmt.Sprintf("%s-%d", z.name, id-1))
	}
	return pods, nil
}

// chaosRecreate deletes the cluster, waits until it and its pods are
// gone, and creates it again as the model says: under Retain it finds its
// volumes, and every znode.
func (z *zkScenario) chaosRecreate(ctx context.Context, m *zkChaosModel) (string, error) {
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Name: zkName, Namespace: z.ns}}
	if err := z.c.Delete(ctx, zk); err != nil {
		return "", err
	}
	err := waitFor(3*time.Minute, z.gone)
	if err != nil {
		return "", fmt.Errorf("deleting: %w", err)
	}
	zk = z.newCluster(m.replicas, m.image)
	if m.tickTime != "" {
		zk.Spec.Config = map[string]string{"tickTime": m.tickTime}
	}
	if err := z.c.Create(ctx, zk); err != nil {
		return "", err
	}
	return fmt.Sprintf("deleted and re-created with %d servers", m.replicas), nil
}

// chaosProgress waits up to a minute for the client's writes to go on.
func (z *zkScenario) chaosProgress() error {
	if err := waitFor(time.Minute, z.wroteMore); err != nil {
		return errors.New("the client's writes stopped: " + err.Error())
	}
	return nil
}

// storedWritesOn lists the znodes the server pod holds, through a client
// of that server alone in the writer's pod, after a sync with the leader.
func (z *zkScenario) storedWritesOn(server string) (map[int]bool, error) {
	pod, err := env.client.CoreV1().Pods(z.ns).Get(context.Background(), server, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out string
	if err := waitFor(time.Minute, func(context.Context) error {
		out, err = kubectl("exec", "-n", z.ns, "writer", "--", "/smoke", "zkcheck", "--server", pod.Status.PodIP+":2181", "--timeout", "30s")
		if err != nil {
			return fmt.Errorf("zkcheck on %s: %w: %s", server, err, out)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return zkcheck.Parse(out)
}

// serverStats is each server's own account, from its admin server's stat
// command: its state, last zxid and znode count.
func (z *zkScenario) serverStats() string {
	pods, err := runningPods(context.Background(), z.ns, "app.kubernetes.io/component=server")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods {
		body, err := kubectl("exec", "-n", z.ns, "writer", "--", "/smoke", "get", "http://"+p.Status.PodIP+":8080/commands/stat")
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		var stat struct {
			ServerStats struct {
				ServerState string `json:"server_state"`
				LastZxid    int64  `json:"last_processed_zxid"`
			} `json:"server_stats"`
			NodeCount int `json:"node_count"`
		}
		if err := json.Unmarshal([]byte(body), &stat); err != nil {
			out = append(out, fmt.Sprintf("%s: %v: %.200s", p.Name, err, body))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s zxid 0x%x, %d znodes", p.Name, stat.ServerStats.ServerState, stat.ServerStats.LastZxid, stat.NodeCount))
	}
	return strings.Join(out, "; ")
}
