//go:build bench

package scale

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileCPU is how long each CPU profile samples: within the creation's
// first minutes, and within the idle window (SCALE_IDLE is at least that
// for the idle one to fall inside it).
const profileCPU = 30 * time.Second

// profiler takes the operator's Go profiles of a run's phases into
// SCALE_PROFILES (a directory; none when empty) and prints what dominates
// each: the figures docs/scale.md reads. Sampling costs the operator a
// little CPU while it runs, in the phases it profiles.
type profiler struct {
	r    *run
	dir  string
	done chan struct{}
}

func newProfiler(r *run) *profiler {
	dir := os.Getenv("SCALE_PROFILES")
	if dir == "" {
		return nil
	}
	dir = filepath.Join(dir, r.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.b.Fatal(err)
	}
	return &profiler{r: r, dir: dir}
}

// cpu samples the operator's CPU for profileCPU in the background, into
// PHASE-cpu.pprof; wait waits for it.
func (p *profiler) cpu(phase string) {
	if p == nil {
		return
	}
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.take(phase+"-cpu", "profile", fmt.Sprintf("seconds=%d", int(profileCPU.Seconds())), profileCPU)
	}()
}

func (p *profiler) wait() {
	if p != nil && p.done != nil {
		<-p.done
	}
}

// heap takes the operator's heap after a collection, into
// PHASE-heap.pprof.
func (p *profiler) heap(phase string) {
	if p != nil {
		p.take(phase+"-heap", "heap", "gc=1", 0)
	}
}

func (p *profiler) take(file, name, query string, took time.Duration) {
	b := p.r.b
	pod, data := p.r.k.OperatorProfile(b, name, query, took)
	path := filepath.Join(p.dir, file+".pprof")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Error(err)
		return
	}
	args := []string{"tool", "pprof", "-top", "-nodecount=25"}
	if name == "heap" {
		args = append(args, "-sample_index=inuse_space")
	}
	out, err := exec.Command("go", append(args, path)...).CombinedOutput()
	if err != nil {
		b.Errorf("go tool pprof %s: %v: %s", path, err, out)
		return
	}
	fmt.Printf("%s: %s of %s (%s):\n%s\n", b.Name(), file, pod, path, strings.TrimSpace(string(out)))
}
