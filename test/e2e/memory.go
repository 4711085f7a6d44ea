//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// samplePodMemory samples a pod's anonymous resident memory, the memory
// its limit's OOM kill weighs and page cache is not, from the pod's
// cgroup on this host every 100 ms until stop is called; stop returns the
// peak in bytes, or 0 when the pod's cgroup was not found (the e2e runs on
// the local cluster's node, as root; cgroup v1's memory controller or v2).
// A step prints it to show how near a workload came to the pod's limit.
func samplePodMemory(t *testing.T, ns, name string) (stop func() int64) {
	t.Helper()
	pod, err := env.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	uid := "pod" + string(pod.UID)
	var stat, key string
	for _, c := range []struct{ glob, key string }{
		{"/sys/fs/cgroup/memory/kubepods/" + uid, "total_rss"},
		{"/sys/fs/cgroup/memory/kubepods/*/" + uid, "total_rss"},
		{"/sys/fs/cgroup/kubepods/" + uid, "anon"},
		{"/sys/fs/cgroup/kubepods/*/" + uid, "anon"},
	} {
		if dirs, _ := filepath.Glob(c.glob); len(dirs) == 1 {
			stat, key = filepath.Join(dirs[0], "memory.stat"), c.key
			break
		}
	}
	if stat == "" {
		t.Logf("No cgroup of the pod %s found on this host: its memory is not sampled", name)
		return func() int64 { return 0 }
	}
	var (
		mu   sync.Mutex
		peak int64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := memoryStat(stat, key); err == nil {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// memoryStat reads one key of a cgroup's memory.stat.
func memoryStat(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if k, v, ok := strings.Cut(lines.Text(), " "); ok && k == key {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}
