package oceanbase

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

func TestParameterStatus(t *testing.T) {
	rows := []obsql.ParameterRow{
		{Addr: "10.0.0.2:2882", Zone: "z2", Value: "INFO", EditLevel: "DYNAMIC_EFFECTIVE"},
		{Addr: "10.0.0.1:2882", Zone: "z1", Value: "info", EditLevel: "DYNAMIC_EFFECTIVE"},
		{Addr: "10.0.0.3:2882", Zone: "z3", Value: "WDIAG", EditLevel: "DYNAMIC_EFFECTIVE"},
		{Addr: "10.0.0.1:2882", Zone: "z1", Tenant: true, Value: "WDIAG", EditLevel: "DYNAMIC_EFFECTIVE"},
	}
	for _, tc := range []struct {
		name, scope, target string
		servers             []string
		drifted             []string
	}{
		{name: "cluster", servers: []string{"10.0.0.1:2882", "10.0.0.2:2882", "10.0.0.3:2882"},
			drifted: []string{"10.0.0.3:2882=WDIAG"}},
		{name: "zone", scope: obsql.ScopeZone, target: "z2", servers: []string{"10.0.0.2:2882"}},
		{name: "server", scope: obsql.ScopeServer, target: "10.0.0.3:2882", servers: []string{"10.0.0.3:2882"},
			drifted: []string{"10.0.0.3:2882=WDIAG"}},
		{name: "zone without servers", scope: obsql.ScopeZone, target: "z9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &obv1.OBParameter{Spec: obv1.OBParameterSpec{Name: "syslog_level", Value: "INFO"}}
			st := &parameter{scope: tc.scope, target: tc.target}
			parameterStatus(p, st, rows)
			var servers []string
			for _, s := range p.Status.Servers {
				servers = append(servers, s.Address)
			}
			if !slices.Equal(servers, tc.servers) || !slices.Equal(st.drifted, tc.drifted) || p.Status.Drifted != int32(len(tc.drifted)) {
				t.Errorf("servers %v, drifted %v (%d); want %v, %v", servers, st.drifted, p.Status.Drifted, tc.servers, tc.drifted)
			}
		})
	}
}

func TestSettling(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	for _, tc := range []struct {
		name   string
		status obv1.OBParameterStatus
		want   bool
	}{
		{name: "never set", want: false},
		{name: "just set", status: obv1.OBParameterStatus{SetValue: "INFO", SetAt: at(time.Second)}, want: true},
		{name: "set long ago", status: obv1.OBParameterStatus{SetValue: "INFO", SetAt: at(time.Minute)}, want: false},
		{name: "another value just set", status: obv1.OBParameterStatus{SetValue: "WDIAG", SetAt: at(time.Second)}, want: false},
		{name: "static, set long ago", status: obv1.OBParameterStatus{SetValue: "INFO", SetAt: at(time.Hour), EditLevel: staticEffective}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &obv1.OBParameter{Spec: obv1.OBParameterSpec{Value: "INFO"}, Status: tc.status}
			if got := settling(p, now); got != tc.want {
				t.Errorf("settling = %v; want %v", got, tc.want)
			}
		})
	}
}
