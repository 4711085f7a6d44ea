package oceanbase

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
)

func TestStoreLost(t *testing.T) {
	now := metav1.Now()
	started := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ob-z1-0"}}
	terminating := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ob-z1-0", DeletionTimestamp: &now}}
	claim := func(uid string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: types.UID("claim-" + uid)}}
	}
	svc := func(recorded string) *corev1.Service {
		s := &corev1.Service{}
		if recorded != "" {
			s.Annotations = map[string]string{StoreClaimAnnotation: "claim-" + recorded}
		}
		return s
	}
	inactive := &obsql.Server{Status: "INACTIVE", StartService: &started}
	active := &obsql.Server{Status: "ACTIVE", StartService: &started}
	deleting := &obsql.Server{Status: "DELETING"}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		claim *corev1.PersistentVolumeClaim
		svc   *corev1.Service
		srv   *obsql.Server
		want  bool
	}{
		{"a new claim while the server is inactive", pod, claim("b"), svc("a"), inactive, true},
		{"restarting on its own claim", pod, claim("a"), svc("a"), inactive, false},
		{"its own claim, serving", pod, claim("a"), svc("a"), active, false},
		{"a new claim before the lease ran out", pod, claim("b"), svc("a"), active, false},
		{"a new claim, the server being deleted", pod, claim("b"), svc("a"), deleting, false},
		{"no record: added before the record existed", pod, claim("b"), svc(""), inactive, false},
		{"not a server (not added yet, or deleted)", pod, claim("b"), svc("a"), nil, false},
		{"no pod", nil, claim("b"), svc("a"), inactive, false},
		{"a terminating pod", terminating, claim("b"), svc("a"), inactive, false},
		{"no claim yet", pod, nil, svc("a"), inactive, false},
		{"no Service", pod, claim("b"), nil, inactive, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storeLost(tc.pod, tc.claim, tc.svc, tc.srv); got != tc.want {
				t.Errorf("storeLost = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMajorityServes(t *testing.T) {
	started := time.Now()
	srv := func(zone, status string, serving bool) obsql.Server {
		s := obsql.Server{Addr: zone + status, Zone: zone, Status: status}
		if serving {
			s.StartService = &started
		}
		return s
	}
	servers := func(list ...obsql.Server) map[string]obsql.Server {
		out := map[string]obsql.Server{}
		for i, s := range list {
			s.Addr += string(rune('a' + i))
			out[s.Addr] = s
		}
		return out
	}
	three := []string{"z1", "z2", "z3"}
	for _, tc := range []struct {
		name    string
		zones   []string
		servers map[string]obsql.Server
		want    bool
	}{
		{"one zone lost of three", three, servers(srv("z1", "ACTIVE", true), srv("z2", "ACTIVE", true),
			srv("z3", "INACTIVE", true)), true},
		{"two zones lost of three", three, servers(srv("z1", "ACTIVE", true), srv("z2", "INACTIVE", true),
			srv("z3", "INACTIVE", true)), false},
		{"a zone with one of two servers lost still serves", three, servers(srv("z1", "ACTIVE", true),
			srv("z1", "INACTIVE", true), srv("z2", "INACTIVE", true), srv("z3", "ACTIVE", true)), true},
		{"active but not serving yet does not count", three, servers(srv("z1", "ACTIVE", true),
			srv("z2", "ACTIVE", false), srv("z3", "INACTIVE", true)), false},
		{"a server of a zone not in the spec does not count", three, servers(srv("z1", "ACTIVE", true),
			srv("z9", "ACTIVE", true), srv("z3", "INACTIVE", true)), false},
		{"two zones lost of five", []string{"z1", "z2", "z3", "z4", "z5"}, servers(srv("z1", "ACTIVE", true),
			srv("z2", "ACTIVE", true), srv("z3", "ACTIVE", true), srv("z4", "INACTIVE", true),
			srv("z5", "INACTIVE", true)), true},
		{"one zone of two lost", []string{"z1", "z2"}, servers(srv("z1", "ACTIVE", true), srv("z2", "INACTIVE", true)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := majorityServes(tc.zones, tc.servers)
			if got != tc.want || got != (why == "") {
				t.Errorf("majorityServes = %v %q, want %v", got, why, tc.want)
			}
			if !got && !strings.Contains(why, "majority") {
				t.Errorf("the reason does not say why: %q", why)
			}
		})
	}
}

// TestReplacementNeedsAnAddressNoLostServerHas: a recovering pod's
// re-created Service may get any freed IP again, its own lost address or
// another lost pod's (a CI run saw the second); neither is a replacement.
func TestReplacementNeedsAnAddressNoLostServerHas(t *testing.T) {
	ob := &Cluster{}
	ob.Status.LostServers = []obv1.OBLostServer{{Pod: "ob-z1-0", Address: "10.0.0.89:2882"}, {Pod: "ob-z1-1", Address: "10.0.0.78:2882"}}
	created := metav1.Now()
	for _, tc := range []struct {
		name, ip string
		want     bool
	}{
		{"its own lost address", "10.0.0.78", false},
		{"the other pod's lost address", "10.0.0.89", false},
		{"a new address", "10.0.0.177", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &cluster{svcs: map[string]*corev1.Service{"ob-z1-1": {
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Spec: corev1.ServiceSpec{ClusterIP: tc.ip}}}}
			svc, addr, _ := replacement(ob, cl, "ob-z1-1")
			if (svc != nil) != tc.want || tc.want && addr != tc.ip+":2882" {
				t.Errorf("replacement = %v, %q; want a replacement: %v", svc != nil, addr, tc.want)
			}
		})
	}
}
