package build_test

import (
	"strings"
	"testing"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

func TestPropertyValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"2000", "2000"},
		{"org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider", "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"},
		{"a=b:c#d!e", "a=b:c#d!e"}, // only significant in keys
		{"2000\nserver.9=evil:2888:3888", `2000\nserver.9=evil:2888:3888`},
		{"a\r\n\tb\f", `a\r\n\tb\f`},
		{`C:\dir\`, `C:\\dir\\`},
		{" lead and trail ", `\ lead and trail `},
		{"é€", `\u00e9\u20ac`},
		{"😀", `\ud83d\ude00`},
		{"\x00\x7f", `\u0000\u007f`},
	} {
		if got := build.PropertyValue(tc.in); got != tc.want {
			t.Errorf("PropertyValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A value cannot add a line to zoo.cfg.
func TestZooCfgValueCannotInjectLines(t *testing.T) {
	zk := newZK(func(s *zkv1.ZookeeperClusterSpec) {
		s.Config = map[string]string{"tickTime": "2000\nserver.9=evil:2888:3888\\", "x": "y"}
	})
	cfg := build.ZooCfg(zk)
	if strings.Contains(cfg, "\nserver.9") {
		t.Errorf("injected line in\n%s", cfg)
	}
	if !strings.Contains(cfg, "\ntickTime=2000\\nserver.9=evil:2888:3888\\\\\n") || !strings.Contains(cfg, "\nx=y\n") {
		t.Errorf("escaped value or the next key missing in\n%s", cfg)
	}
}
