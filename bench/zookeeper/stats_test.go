package zookeeper

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/framework/probe"
	zkctrl "github.com/stewardhq/steward/internal/zookeeper"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
	"github.com/stewardhq/steward/internal/zookeeper/zktest"
)

// BenchmarkEnsembleStats observes 7 servers (stat and voting_view) the way
// the controller does, through the same call (one concurrent call per server, 2 s per call, 3 s for
// all), first with all answering, then with one hung. It reports the time
// of one gathering in each case and their ratio: the hung server costs at
// most the deadline, never a pass that waits on it forever.
func BenchmarkEnsembleStats(b *testing.B) {
	e := zktest.Start(b, 7)
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	if err := e.WaitServing(ctx); err != nil {
		b.Fatal(err)
	}
	var targets []probe.Target
	for _, s := range e.Servers() {
		targets = append(targets, probe.Target{Group: "bench", Key: s.AdminAddr(), Address: s.AdminAddr()})
	}
	client := &http.Client{}
	gather := func() (time.Duration, int) {
		// A fresh collector each time: no cached answer, no call in flight.
		c := probe.NewCollector(probe.Options[zkclient.Observation]{CallTimeout: 2 * time.Second, Deadline: 3 * time.Second})
		start := time.Now()
		res := zkctrl.ObserveEnsemble(b.Context(), c, client, targets)
		took := time.Since(start)
		ok := 0
		for _, r := range res {
			if r.OK() {
				ok++
			}
		}
		return took, ok
	}
	var healthy, hung time.Duration
	var okHealthy, okHung int
	for b.Loop() {
		d, ok := gather()
		healthy += d
		okHealthy = ok
		if err := e.Servers()[6].Pause(); err != nil {
			b.Fatal(err)
		}
		d, ok = gather()
		hung += d
		okHung = ok
		if err := e.Servers()[6].Resume(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(healthy.Seconds()*1000/n, "ms-all-answer")
	b.ReportMetric(hung.Seconds()*1000/n, "ms-one-hung")
	b.ReportMetric(hung.Seconds()/healthy.Seconds(), "hung/all")
	b.Logf("7 servers: %d answered in %s; with one hung, %d answered in %s",
		okHealthy, (healthy / time.Duration(b.N)).Round(time.Millisecond), okHung, (hung / time.Duration(b.N)).Round(time.Millisecond))
}
