//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/internal/systems"
)

// zookeeperImageSpec runs the ZooKeeper image as a real pod by its contract
// (zoo.cfg from a ConfigMap in /conf, data in /data) and asks its
// AdminServer for stat from another pod, as the operator will.
func zookeeperImageSpec(t *testing.T, in specInput) {
	if out, err := localkube("load-image", in.archive(t, systems.ZooKeeper)); err != nil {
		fatalf(t, "load ZooKeeper image (run `make images`): %v: %s", err, out)
	}
	ns := newNamespace(t, "zk")
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "zk"},
		Data: map[string]string{"zoo.cfg": "dataDir=/data\nclientPort=2181\ntickTime=2000\n" +
			"admin.enableServer=true\nadmin.serverPort=8080\n"},
	}
	if _, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "zk-0"},
		Spec: corev1.PodSpec{
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](101)},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:            "zookeeper",
				Image:           in.image(t, systems.ZooKeeper),
				ImagePullPolicy: corev1.PullNever,
				Env:             []corev1.EnvVar{{Name: "ZK_HEAP", Value: "256m"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "conf", MountPath: "/conf"},
					{Name: "data", MountPath: "/data"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "zk"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	startClient(t, ns)
	var state string
	eventually(t, 3*time.Minute, "the AdminServer answers stat", func(ctx context.Context) error {
		zk, err := env.client.CoreV1().Pods(ns).Get(ctx, "zk-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if zk.Status.PodIP == "" {
			return fmt.Errorf("zk-0 has no IP yet (phase %s)", zk.Status.Phase)
		}
		out, err := kubectl("exec", "-n", ns, "client", "--", "/smoke", "get", fmt.Sprintf("http://%s:8080/commands/stat", zk.Status.PodIP))
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		// While the server starts, the AdminServer answers 200 with an
		// error ("not currently serving requests") and no server_stats.
		var stat struct {
			ServerStats struct {
				ServerState string `json:"server_state"`
			} `json:"server_stats"`
			Error *string `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &stat); err != nil {
			return fmt.Errorf("decode %q: %w", out, err)
		}
		if stat.Error != nil {
			return fmt.Errorf("stat answered an error: %s", *stat.Error)
		}
		state = stat.ServerStats.ServerState
		if state == "" {
			return fmt.Errorf("no server_state in %q", out)
		}
		return nil
	})
	if state != "standalone" {
		fatalf(t, "server_state %q, want standalone", state)
	}

	// serverPod is pod under another name, with the config of the
	// ConfigMap config (made with zooCfg when given) and the environment
	// vars.
	serverPod := func(name, config, zooCfg string, vars ...corev1.EnvVar) *corev1.Pod {
		if zooCfg != "" {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config}, Data: map[string]string{"zoo.cfg": zooCfg}}
			if _, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				fatalNow(t, err)
			}
		}
		p := pod.DeepCopy()
		p.Name = name
		p.Spec.Containers[0].Env = vars
		p.Spec.Volumes[0].ConfigMap.Name = config
		return p
	}

	// A server whose volume has served before (it has a myid) and whose
	// name does not resolve to its address waits ZK_DNS_WAIT seconds for
	// the DNS, then starts anyway and says so; a new server (no myid yet)
	// does not ask the DNS at all.
	fresh := serverPod("zk-dns-new", "zk-dns", "dataDir=/data\ntickTime=2000\n"+
		"server.1=never-resolves.invalid.svc.cluster.local:2888:3888;2181\n",
		corev1.EnvVar{Name: "ZK_MYID", Value: "1"}, corev1.EnvVar{Name: "ZK_DNS_WAIT", Value: "2"})
	served := fresh.DeepCopy()
	served.Name = "zk-dns"
	served.Spec.InitContainers = []corev1.Container{{
		Name: "served-before", Image: fresh.Spec.Containers[0].Image, ImagePullPolicy: corev1.PullNever,
		Command:      []string{"/bin/bash", "-c", "echo 1 >/data/myid"},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}}
	for _, p := range []*corev1.Pod{fresh, served} {
		if _, err := env.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			fatalNow(t, err)
		}
	}
	logSays := func(pod string, want, wantNot []string) func(context.Context) error {
		return func(context.Context) error {
			out, err := kubectl("logs", "-n", ns, pod)
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("no %q in the log:\n%s", w, out)
				}
			}
			for _, w := range wantNot {
				if strings.Contains(out, w) {
					fatalf(t, "%s: %q in the log:\n%s", pod, w, out)
				}
			}
			return nil
		}
	}
	eventually(t, 2*time.Minute, "zk-dns waited for its name, then started", logSays("zk-dns", []string{
		"waiting for never-resolves.invalid.svc.cluster.local to resolve to this pod's address",
		"still resolves to nothing after 2s",
		"starting ZooKeeper",
	}, nil))
	eventually(t, time.Minute, "zk-dns-new started without asking the DNS", logSays("zk-dns-new", []string{
		"a new server: starting without asking the DNS for never-resolves.invalid.svc.cluster.local",
		"starting ZooKeeper",
	}, []string{"waiting for"}))

	// A server waits (ZK_PEER_WAIT) until the DNS has its peers' names,
	// asking in a way that leaves no cached "no such name" behind, and
	// names those it did not find.
	peerWait := serverPod("zk-peers", "zk-peers", "dataDir=/data\ntickTime=2000\n"+
		"server.1=zk-peers.invalid.svc.cluster.local:2888:3888;2181\n"+
		"server.2=never-resolves.invalid.svc.cluster.local:2888:3888;2181\n"+
		"server.3=kubernetes.default.svc.cluster.local:2888:3888;2181\n",
		corev1.EnvVar{Name: "ZK_MYID", Value: "1"}, corev1.EnvVar{Name: "ZK_PEER_WAIT", Value: "2"})
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, peerWait, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "zk-peers waited for the peer the DNS does not have", logSays("zk-peers", []string{
		"warning: not in the DNS after 2s: never-resolves.invalid.svc.cluster.local; starting anyway",
		"starting ZooKeeper",
	}, []string{"did not answer"}))

	// A pod deleted while zk-run waits for the DNS goes at once: the shell
	// is PID 1 until it execs the JVM, and it must not ignore SIGTERM for
	// the pod's grace period (30 s here).
	waiting := serverPod("zk-dns-deleted", "zk-dns", "", corev1.EnvVar{Name: "ZK_DNS_WAIT", Value: "300"})
	waiting.Spec.InitContainers = served.Spec.InitContainers
	waiting.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, waiting, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "zk-dns-deleted waits for its name", logSays(waiting.Name,
		[]string{"waiting for never-resolves.invalid.svc.cluster.local"}, []string{"starting ZooKeeper"}))
	deleted := time.Now()
	if err := env.client.CoreV1().Pods(ns).Delete(ctx, waiting.Name, metav1.DeleteOptions{}); err != nil {
		fatalNow(t, err)
	}
	eventually(t, time.Minute, "zk-dns-deleted is gone", func(ctx context.Context) error {
		switch _, err := env.client.CoreV1().Pods(ns).Get(ctx, waiting.Name, metav1.GetOptions{}); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		default:
			return errors.New("still there")
		}
	})
	took := time.Since(deleted)
	t.Logf("zk-dns-deleted went %s after its deletion (grace period 30 s)", took.Round(100*time.Millisecond))
	if took > 15*time.Second {
		fatalf(t, "a pod deleted while zk-run waited for the DNS took %s to go, want well under its 30 s grace period", took.Round(time.Second))
	}
}
