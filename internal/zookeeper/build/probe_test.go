package build_test

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zktest"
)

// TestProbeCommands runs the probes' commands against real servers (from
// the image's root filesystem; zktest skips without it): readiness passes
// on a serving server and fails on one that lost its quorum, while
// liveness passes on both; both fail, within their own timeout, on a
// frozen server.
func TestProbeCommands(t *testing.T) {
	e := zktest.Start(t, 2)
	s1, s2 := e.Server(1), e.Server(2)

	probe := func(cmd []string, port int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		args := slices.Clone(cmd)
		args[len(args)-1] = strings.ReplaceAll(args[len(args)-1], "/2181", "/"+strconv.Itoa(port))
		return exec.CommandContext(ctx, args[0], args[1:]...).Run()
	}
	if err := probe(build.ReadinessCommand, s1.ClientPort()); err != nil {
		t.Errorf("readiness of a serving server: %v", err)
	}
	if err := probe(build.LivenessCommand, s1.ClientPort()); err != nil {
		t.Errorf("liveness of a serving server: %v", err)
	}
	// Frozen, a server accepts connections in the kernel and never answers.
	if err := s1.Pause(); err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string][]string{"readiness": build.ReadinessCommand, "liveness": build.LivenessCommand} {
		start := time.Now()
		err := probe(cmd, s1.ClientPort())
		if took := time.Since(start); err == nil || took > 4*time.Second {
			t.Errorf("%s of a frozen server: %v after %s, want a failure within its 2s timeout", name, err, took.Round(time.Millisecond))
		}
	}
	if err := s1.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := probe(build.ReadinessCommand, s1.ClientPort()); err != nil {
		t.Errorf("readiness of a resumed server: %v", err)
	}
	if err := s2.Stop(); err != nil {
		t.Fatal(err)
	}
	// Server 1 notices the lost quorum within a few ticks.
	deadline := time.Now().Add(20 * time.Second)
	for probe(build.ReadinessCommand, s1.ClientPort()) == nil {
		if time.Now().After(deadline) {
			t.Fatal("readiness still passes on a server without quorum")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := probe(build.LivenessCommand, s1.ClientPort()); err != nil {
		t.Errorf("liveness of a server without quorum: %v", err)
	}
	if err := probe(build.LivenessCommand, s2.ClientPort()); err == nil {
		t.Error("liveness passes on a stopped server")
	}
}
