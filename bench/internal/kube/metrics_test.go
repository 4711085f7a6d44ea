package kube

import (
	"math"
	"testing"
)

const exposition = `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="10.96.0.1:443",method="GET"} 120
rest_client_requests_total{code="409",host="10.96.0.1:443",method="PUT"} 7
rest_client_requests_total{code="404",host="10.96.0.1:443",method="DELETE"} 2
process_resident_memory_bytes 5.24288e+07
apiserver_request_total{code="409",resource="statefulsets",subresource="status",verb="UPDATE",message="a \"quoted\", value"} 3
workqueue_queue_duration_seconds_bucket{name="zk",le="0.001"} 10
workqueue_queue_duration_seconds_bucket{name="zk",le="0.01"} 20
workqueue_queue_duration_seconds_bucket{name="zk",le="0.1"} 40
workqueue_queue_duration_seconds_bucket{name="zk",le="+Inf"} 40
workqueue_queue_duration_seconds_bucket{name="other",le="+Inf"} 1000
`

func TestParseMetrics(t *testing.T) {
	m := ParseMetrics([]byte(exposition), nil)
	if got := m.Sum("rest_client_requests_total"); got != 129 {
		t.Errorf("all requests = %v, want 129", got)
	}
	if got := m.Sum("rest_client_requests_total", "code", "409", "method", "PUT"); got != 7 {
		t.Errorf("409 PUTs = %v, want 7", got)
	}
	if got := m.Sum("process_resident_memory_bytes"); got != 52428800 {
		t.Errorf("rss = %v, want 52428800", got)
	}
	groups := m.GroupBy("apiserver_request_total", []string{"verb", "resource", "subresource"}, "code", "409")
	if groups["UPDATE statefulsets status"] != 3 || len(groups) != 1 {
		t.Errorf("409s by verb and resource = %v, want UPDATE statefulsets status: 3", groups)
	}
	for _, s := range m {
		if s.Name == "apiserver_request_total" && s.Labels["message"] != `a "quoted", value` {
			t.Errorf("escaped label read as %q", s.Labels["message"])
		}
	}
	kept := ParseMetrics([]byte(exposition), func(name string) bool { return name == "process_resident_memory_bytes" })
	if len(kept) != 1 {
		t.Errorf("kept %d samples, want only the one asked for", len(kept))
	}
}

func TestMinusAndQuantile(t *testing.T) {
	before := ParseMetrics([]byte(`workqueue_queue_duration_seconds_bucket{name="zk",le="0.001"} 10
workqueue_queue_duration_seconds_bucket{name="zk",le="0.01"} 10
workqueue_queue_duration_seconds_bucket{name="zk",le="0.1"} 10
workqueue_queue_duration_seconds_bucket{name="zk",le="+Inf"} 10
`), nil)
	after := ParseMetrics([]byte(exposition), nil)
	d := after.Minus(before)
	// In between: 10 observations in (0.001, 0.01], 20 in (0.01, 0.1].
	if got := d.Quantile(0.5, "workqueue_queue_duration_seconds", "name", "zk"); math.Abs(got-0.0325) > 1e-9 {
		t.Errorf("p50 = %v, want 0.0325 (a quarter into the (0.01, 0.1] bucket: 0.01 + 0.09*5/20)", got)
	}
	if got := d.Quantile(0.25, "workqueue_queue_duration_seconds", "name", "zk"); math.Abs(got-0.00775) > 1e-9 {
		t.Errorf("p25 = %v, want 0.00775", got)
	}
	if got := before.Minus(before).Quantile(0.5, "workqueue_queue_duration_seconds", "name", "zk"); !math.IsNaN(got) {
		t.Errorf("quantile of nothing observed = %v, want NaN", got)
	}
	if got := after.Quantile(0.99, "workqueue_queue_duration_seconds", "name", "other"); got != 0 {
		t.Errorf("quantile in the +Inf bucket = %v, want the largest finite bound (none: 0)", got)
	}
}
