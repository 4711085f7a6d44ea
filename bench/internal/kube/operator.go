//go:build bench

package kube

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/test/portforward"
)

// The ServiceAccount bench/rbac.yaml binds to the chart's metrics-reader
// and pprof-reader ClusterRoles: the benchmarks scrape and profile the
// operator as a user's Prometheus and a user's profiler would.
const benchAccount = "steward-bench"

// operatorEndpoint is a benchmark's way to the leading replica's metrics
// port: a port-forward, because the API server's pod proxy drops the
// caller's token, and that account's token.
type operatorEndpoint struct {
	pod, addr string
	stop      func()
	token     string
	client    *http.Client
}

// OperatorMetrics reads the leading replica's metrics (the one that
// reconciles).
func (k *Kube) OperatorMetrics(tb testing.TB) Operator {
	tb.Helper()
	leader, raw := k.operatorGet(tb, "/metrics", 30*time.Second)
	m := ParseMetrics(raw, nil)
	return Operator{Pod: leader, Started: m.Sum("process_start_time_seconds"), Metrics: m}
}

// OperatorProfile reads one of the leading replica's Go profiles
// (/debug/pprof/NAME?QUERY; the chart must be installed with
// metrics.pprof=true, as make bench-setup does), such as "profile",
// "seconds=30" for half a minute of CPU or "heap", "gc=1" for the heap
// after a collection. It returns the leader's pod and the profile.
func (k *Kube) OperatorProfile(tb testing.TB, name, query string, took time.Duration) (pod string, profile []byte) {
	tb.Helper()
	return k.operatorGet(tb, "/debug/pprof/"+name+"?"+query, took+30*time.Second)
}

// operatorGet GETs path from the leader's metrics port, forwarding to a
// new leader when the Lease has moved.
func (k *Kube) operatorGet(tb testing.TB, path string, timeout time.Duration) (string, []byte) {
	tb.Helper()
	lease, err := k.CS.CoordinationV1().Leases(OperatorNamespace).Get(tb.Context(), LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		tb.Fatalf("the operator's Lease: %v (no holder, or %v)", lease, err)
	}
	leader, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	op := &k.operator
	if op.pod != leader {
		if op.stop != nil {
			op.stop()
		}
		root, err := filepath.Abs("../..") // every benchmark is a package of bench/
		if err != nil {
			tb.Fatal(err)
		}
		addr, stop, err := portforward.Start(filepath.Join(root, ".cache", "localkube", "bin", "kubectl"), KubeconfigPath(), OperatorNamespace, "pod/"+leader, 8443)
		if err != nil {
			tb.Fatalf("forward to the operator's metrics port: %v", err)
		}
		tb.Cleanup(stop)
		op.pod, op.addr, op.stop = leader, addr, stop
	}
	if op.token == "" {
		tr, err := k.CS.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(tb.Context(), benchAccount,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}, metav1.CreateOptions{})
		if err != nil {
			tb.Fatalf("a token of %s (bench/rbac.yaml, applied by make bench-setup): %v", benchAccount, err)
		}
		op.token = tr.Status.Token
		// The operator's serving certificate is its own, self-signed; the
		// connection is a loopback port-forward through the API server.
		op.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	}
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+op.addr+path, http.NoBody)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+op.token)
	resp, err := op.client.Do(req)
	if err != nil {
		tb.Fatalf("GET %s from the operator: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s from the operator: %s %v: %.200s", path, resp.Status, err, body)
	}
	return leader, body
}
