package cluster

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/tools/localkube/internal/netns"
)

// TestRestartRefuses checks what Restart refuses before it stops
// anything: no cluster recorded, a component it cannot restart (the
// forwarder, kwok, a typing mistake), one that does not run. The restart
// itself is exercised on a real cluster by the chaos suite's API server
// restarts (test/e2e).
func TestRestartRefuses(t *testing.T) {
	if err := netns.CheckRoot(); err != nil {
		t.Skip(err)
	}
	c := testConfig(t)
	restart := func(name string) error { return c.Restart(t.Context(), name, time.Second, io.Discard) }
	if err := restart("kube-apiserver"); err == nil || !strings.Contains(err.Error(), "no cluster to restart kube-apiserver in") {
		t.Errorf("with no cluster: %v", err)
	}
	if err := c.saveState(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"forwarder":      `component "forwarder" cannot be restarted: want one of [etcd kube-apiserver`,
		"kwok":           `component "kwok" cannot be restarted`,
		"kube-apiservr":  `component "kube-apiservr" cannot be restarted`,
		"kube-apiserver": "kube-apiserver is not running: nothing to restart",
	} {
		if err := restart(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("restart %s: %v, want %q", name, err, want)
		}
	}
}
