package zookeeper_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// TestUnreachableServersHoldStatusStill runs a cluster whose servers never
// answer, as in a network partition: two accept connections and hang, one
// refuses them. Status says so, by class, once; then, while background
// probes keep failing the same way and passes keep running (resync every
// second), status is not written again.
func TestUnreachableServersHoldStatusStill(t *testing.T) {
	cfg, c, ns := setup(t)
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hung.Close() })
	go func() {
		for {
			conn, err := hung.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
		}
	}()
	port := hung.Addr().(*net.TCPAddr).Port
	startManagerWith(t, cfg, ns, zookeeper.Options{Resync: time.Second, ProbeTimeout: 300 * time.Millisecond,
		ProbeInterval: 100 * time.Millisecond})

	create(t, c, newCluster(ns, "zk", func(s *zkv1.ZookeeperClusterSpec) { s.AdminPort = int32(port) }))
	zk := waitCluster(t, c, ns, "zk", "the cluster to settle", settled)
	// The StatefulSet controller does not run here: the test makes the
	// pods. 127.0.0.2 has nothing listening on the port.
	for ordinal, ip := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.2"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zk-" + strconv.Itoa(ordinal),
				Labels: build.Selector(zk, build.ComponentServer)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: build.ContainerName, Image: "zookeeper"}}},
		}
		create(t, c, pod)
		pod.Status.PodIP = ip
		if err := c.Status().Update(t.Context(), pod); err != nil {
			t.Fatalf("set the IP of pod %s: %v", pod.Name, err)
		}
	}

	zk = waitCluster(t, c, ns, "zk", "the servers' failures in status", func(zk *zkv1.ZookeeperCluster) bool {
		errs := map[string]string{}
		for _, s := range zk.Status.Servers[zkv1.RoleUnknown] {
			errs[s.Name] = s.Error
		}
		return errs["zk-0"] == "timeout: no answer in time" && errs["zk-1"] == "timeout: no answer in time" &&
			errs["zk-2"] == "refused: nothing listens at the address"
	})

	w, err := c.Watch(t.Context(), &zkv1.ZookeeperClusterList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": "zk"}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: zk.ResourceVersion}})
	if err != nil {
		t.Fatalf("watch the cluster: %v", err)
	}
	defer w.Stop()
	const window = 5 * time.Second
	deadline := time.After(window)
	writes := 0
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Modified {
				writes++
				t.Logf("status written: %s", describeStatus(ev.Object.(*zkv1.ZookeeperCluster)))
			}
		case <-deadline:
			done = true
		}
	}
	if writes != 0 {
		t.Errorf("%d writes of the cluster in %s while its servers kept failing the same way, want none", writes, window)
	}
}
