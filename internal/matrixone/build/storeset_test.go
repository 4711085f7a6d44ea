package build

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
)

func storeSet(role Role) StoreSet {
	log := newLogSet()
	log.Status.ServiceAddresses = LogServiceAddresses(log)
	pods := &mov1.PodSetSpec{Image: mov1.DefaultImage, RoleSpec: mov1.RoleSpec{Config: "[log]\nlevel = \"info\"\n"}}
	s := StoreSet{Namespace: "db", Name: "mo-" + strings.ToLower(string(role)), Role: role, Replicas: 2, Pods: pods, Log: log,
		Storage: &commonv1.StorageSpec{}, ServiceType: corev1.ServiceTypeClusterIP}
	switch role {
	case RoleTN:
		s.Replicas = 1
	case RoleCN:
		s.ProxyEnabled = true
	case RoleProxy:
		s.Storage = nil
	}
	return s
}

func TestStoreSetConfig(t *testing.T) {
	for _, tc := range []struct {
		role Role
		want map[string]any
	}{
		{RoleTN, map[string]any{"service-type": "TN", "tn.service-host": "${POD_NAME}.mo-tn-headless.db.svc", "tn.uuid": "${STORE_UUID}"}},
		{RoleCN, map[string]any{"service-type": "CN", "cn.service-host": "${POD_IP}", "cn.frontend.proxy-enabled": true,
			"cn.sql-address": "${POD_IP}:6001"}},
		{RoleProxy, map[string]any{"service-type": "PROXY", "proxy.listen-address": "0.0.0.0:6001"}},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			text, err := storeSet(tc.role).Config()
			if err != nil {
				t.Fatal(err)
			}
			cfg := decode(t, text)
			for path, want := range tc.want {
				if got := at(t, cfg, path); got != want {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
			if got := at(t, cfg, "hakeeper-client.service-addresses").([]any); len(got) != 3 {
				t.Errorf("HAKeeper addresses %v", got)
			}
			if at(t, cfg, "log.level") != "info" {
				t.Error("the user's TOML is lost")
			}
		})
	}
	s := storeSet(RoleTN)
	s.Log.Status.ServiceAddresses = nil
	if _, err := s.Config(); err == nil || !strings.Contains(err.Error(), "no service addresses") {
		t.Errorf("a LogSet without addresses: %v", err)
	}
}

func TestStoreSetChildren(t *testing.T) {
	for _, tc := range []struct {
		role          Role
		claims        bool
		sqlService    bool
		readyPort     string
		podNamePrefix string
	}{
		{RoleTN, true, false, PortNameService, "mo-tn-"},
		{RoleCN, true, true, PortNameSQL, "mo-cn-"},
		{RoleProxy, false, true, PortNameSQL, "mo-proxy-"},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			s := storeSet(tc.role)
			sts := s.StatefulSet("cfg")
			if got := len(sts.Spec.VolumeClaimTemplates) > 0; got != tc.claims {
				t.Errorf("volume claims %v, want %v", got, tc.claims)
			}
			if !slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == DataVolume && v.EmptyDir != nil
			}) == !tc.claims {
				t.Errorf("an emptyDir data volume: %v, want %v", !tc.claims, !tc.claims)
			}
			mo := sts.Spec.Template.Spec.Containers[0]
			if mo.ReadinessProbe.TCPSocket.Port.StrVal != tc.readyPort || mo.Args[1] != ConfigDir+"/"+s.TemplateFile() {
				t.Errorf("container %+v", mo)
			}
			if s.ServesSQL() != tc.sqlService {
				t.Errorf("ServesSQL %v", s.ServesSQL())
			}
			if svc := s.SQLService(); svc.Spec.Ports[0].Port != SQLPort || svc.Spec.Selector["app.kubernetes.io/component"] != s.Component() {
				t.Errorf("SQL Service %+v", svc.Spec)
			}
			if !strings.HasPrefix(s.PodName(0), tc.podNamePrefix) || !s.HeadlessService().Spec.PublishNotReadyAddresses {
				t.Errorf("names %s", s.PodName(0))
			}
		})
	}
}
