package build

import (
	"reflect"
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
			if mo.Args[1] != ConfigDir+"/"+s.TemplateFile() {
				t.Errorf("container %+v", mo)
			}
			checkReadiness(t, s, sts.Spec.Template.Spec, tc.readyPort)
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

// TestStoreSetS3 checks that every store role's pods get the LogSet's S3
// location: its CA Secret mounted (with the key the Secret names), its
// file in cert-files, path style as is-minio, its credentials from the
// Secret.
func TestStoreSetS3(t *testing.T) {
	for _, role := range []Role{RoleTN, RoleCN, RoleProxy} {
		t.Run(string(role), func(t *testing.T) {
			s := storeSet(role)
			s.Log.Spec.SharedStorage = mov1.SharedStorage{S3: &mov1.S3Storage{Endpoint: "https://s3", Bucket: "mo-data", Region: "r",
				PathStyle: true, CredentialsSecret: "s3-keys", CASecret: &mov1.S3CASecret{Name: "corp-ca", Key: "bundle.pem"}}}
			pod := s.StatefulSet("cfg").Spec.Template.Spec
			checkS3CA(t, pod, pod.Containers[0], "corp-ca", "bundle.pem")
			if env(pod.Containers[0], "AWS_ACCESS_KEY_ID") != "" ||
				!slices.ContainsFunc(pod.Containers[0].Env, func(e corev1.EnvVar) bool {
					return e.Name == "AWS_SECRET_ACCESS_KEY" && e.ValueFrom.SecretKeyRef.Name == "s3-keys"
				}) {
				t.Errorf("the credentials do not come from the Secret: %+v", pod.Containers[0].Env)
			}
			cfg := decode(t, must(s.Config()))
			shared := fileService(t, cfg, "SHARED")["s3"].(map[string]any)
			if shared["is-minio"] != true || !reflect.DeepEqual(shared["cert-files"], []any{S3CAFile}) {
				t.Errorf("SHARED's S3 arguments %v", shared)
			}
		})
	}
}

// checkReadiness checks how a store's pod is ready: a TN when its service
// port accepts; a CN or proxy when sql-ready, in the mo container,
// completes a MySQL handshake and select 1 on the pod's SQL port as root,
// with the password from the LogSet's Secret, mounted (so that a password
// written to the Secret reaches it), and within a deadline the kubelet
// outlasts.
func checkReadiness(t *testing.T, s StoreSet, pod corev1.PodSpec, readyPort string) {
	t.Helper()
	mo := pod.Containers[0]
	probe := mo.ReadinessProbe
	hasVolume := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == RootPasswordVolume })
	if !s.ServesSQL() {
		if probe.TCPSocket == nil || probe.TCPSocket.Port.StrVal != readyPort || hasVolume {
			t.Errorf("a TN is ready when port %s accepts: %+v (password volume %v)", readyPort, probe, hasVolume)
		}
		return
	}
	want := []string{"/sql-ready", "--addr", "127.0.0.1:6001", "--password-file", "/etc/matrixone-root/password", "--timeout", "2s"}
	if probe.Exec == nil || !slices.Equal(probe.Exec.Command, want) || probe.TCPSocket != nil {
		t.Fatalf("readiness %+v, want exec %q", probe, want)
	}
	if deadline := 2; int(probe.TimeoutSeconds) <= deadline || probe.PeriodSeconds > 5 || probe.FailureThreshold < 2 {
		t.Errorf("timeout %ds (sql-ready's own deadline %ds must be under it), period %ds, failures %d",
			probe.TimeoutSeconds, deadline, probe.PeriodSeconds, probe.FailureThreshold)
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == RootPasswordVolume })
	if i < 0 {
		t.Fatalf("no %s volume: %+v", RootPasswordVolume, pod.Volumes)
	}
	secret := pod.Volumes[i].Secret
	if secret == nil || secret.SecretName != "mo-log-root" || !*secret.Optional || *secret.DefaultMode != 0o440 ||
		!slices.Equal(secret.Items, []corev1.KeyToPath{{Key: "password", Path: "password"}}) {
		t.Errorf("password volume %+v", pod.Volumes[i])
	}
	if !slices.Contains(mo.VolumeMounts, corev1.VolumeMount{Name: RootPasswordVolume, MountPath: "/etc/matrixone-root", ReadOnly: true}) {
		t.Errorf("password not mounted: %+v", mo.VolumeMounts)
	}
}
