//go:build bench

package scale

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

// components are localkube's processes whose memory and CPU the
// benchmark reports, to see which part of the cluster limits a phase and
// that etcd and the API server hold a thousand clusters in sane memory.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "provisioner", "kube-proxy", "coredns"}

// procStat is a process's CPU time (seconds), resident memory and peak
// resident memory (bytes).
type procStat struct {
	cpu, rss, peak float64
}

// localkubeProcs reads each component's PID from localkube's state
// directory (the kubeconfig's) and its /proc entry. It returns nothing
// when the cluster is not localkube's or the benchmark cannot read it.
func localkubeProcs() map[string]procStat {
	out := map[string]procStat{}
	dir := filepath.Join(filepath.Dir(benchkube.KubeconfigPath()), "pids")
	for _, name := range components {
		data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(string(data), &pid); err != nil {
			continue
		}
		if st, err := readProc(pid); err == nil {
			out[name] = st
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

func readProc(pid int) (procStat, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("pid %d: unreadable stat", pid)
	}
	// After the command: state is field 3, utime 14, stime 15.
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return procStat{}, fmt.Errorf("pid %d: short stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("pid %d: unreadable times", pid)
	}
	st := procStat{cpu: (utime + stime) / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStat{}, err
	}
	kB := func(v string) float64 {
		n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		return n * 1024
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			st.rss = kB(rest)
		}
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			st.peak = kB(rest)
		}
	}
	return st, nil
}
