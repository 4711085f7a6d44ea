package kube

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// LoadFromEnv loads the machine with BENCH_CPU_BURNERS busy goroutines in
// the benchmark's own process (none when it is unset or 0), so that a
// comparison can be made on a busy node as well as an idle one. They spin
// until the benchmark ends: the load is bounded by the benchmark's run. It
// returns a description of the load for the benchmark's log.
func LoadFromEnv(tb testing.TB) string {
	tb.Helper()
	v := os.Getenv("BENCH_CPU_BURNERS")
	if v == "" || v == "0" {
		return "no added load"
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 64 {
		tb.Fatalf("BENCH_CPU_BURNERS=%q: want a number of busy goroutines from 0 to 64", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for x := uint64(1); ctx.Err() == nil; {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		})
	}
	tb.Cleanup(func() { cancel(); wg.Wait() })
	return strconv.Itoa(n) + " busy goroutines in the benchmark's process"
}

// LoadAverage is the machine's 1-minute load average, as /proc/loadavg
// says it ("?" where it cannot be read).
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
