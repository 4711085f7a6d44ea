package build_test

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/zookeeper/build"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// newZK returns the defaulted cluster ns/zk with mutate applied to its
// spec first.
func newZK(mutate func(*zkv1.ZookeeperClusterSpec)) *zkv1.ZookeeperCluster {
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Name: "zk", Namespace: "ns"}}
	if mutate != nil {
		mutate(&zk.Spec)
	}
	zkv1.Default(zk)
	return zk
}

func TestNames(t *testing.T) {
	zk := newZK(nil)
	for _, tc := range []struct{ got, want string }{
		{build.HeadlessServiceName(zk), "zk-headless"},
		{build.ClientServiceName(zk), "zk-client"},
		{build.PodName(zk, 2), "zk-2"},
		{build.PodAddress(zk, 0, ""), "zk-0.zk-headless.ns.svc.cluster.local"},
		{build.PodAddress(zk, 1, "example.org"), "zk-1.zk-headless.ns.svc.example.org"},
		{build.ClientEndpoint(zk, ""), "zk-client.ns.svc.cluster.local:2181"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if build.ServerID(0) != 1 || build.Ordinal(3) != 2 {
		t.Errorf("ServerID(0) = %d, Ordinal(3) = %d", build.ServerID(0), build.Ordinal(3))
	}
	want := map[string]string{
		standard.LabelName: "zookeeper", standard.LabelInstance: "zk", standard.LabelComponent: "server",
		standard.LabelPartOf: "zookeeper", standard.LabelManagedBy: standard.ManagedBy,
	}
	if got := build.Labels(zk, build.ComponentServer); !maps.Equal(got, want) {
		t.Errorf("Labels = %v, want %v", got, want)
	}
	delete(want, standard.LabelPartOf)
	if got := build.Selector(zk, build.ComponentServer); !maps.Equal(got, want) {
		t.Errorf("Selector = %v, want %v", got, want)
	}
}

func TestZooCfg(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*zkv1.ZookeeperClusterSpec)
		want   string
	}{
		{"defaults", nil, `# Written by Steward for ZookeeperCluster ns/zk; edit spec.config instead.
4lw.commands.whitelist=srvr,stat,mntr,ruok,conf
admin.enableServer=true
admin.serverPort=8080
connectToLearnerMasterLimit=2
dataDir=/data
initLimit=10
quorumListenOnAllIPs=true
reconfigEnabled=true
standaloneEnabled=false
syncLimit=5
tickTime=2000
`},
		{"user keys override defaults, sorted among the rest", func(s *zkv1.ZookeeperClusterSpec) {
			s.AdminPort = 9090
			s.Config = map[string]string{"tickTime": "3000", "maxClientCnxns": "100", "autopurge.purgeInterval": "24"}
		}, `# Written by Steward for ZookeeperCluster ns/zk; edit spec.config instead.
4lw.commands.whitelist=srvr,stat,mntr,ruok,conf
admin.enableServer=true
admin.serverPort=9090
autopurge.purgeInterval=24
connectToLearnerMasterLimit=2
dataDir=/data
initLimit=10
maxClientCnxns=100
quorumListenOnAllIPs=true
reconfigEnabled=true
standaloneEnabled=false
syncLimit=5
tickTime=3000
`},
		{"operator-owned user keys are ignored", func(s *zkv1.ZookeeperClusterSpec) {
			s.Config = map[string]string{
				"dataDir": "/tmp", "server.9": "evil:2888:3888", "admin.serverPort": "1",
				"4lw.commands.whitelist": "*", "standaloneEnabled": "true", "dataLogDir": "/tmp",
			}
		}, `# Written by Steward for ZookeeperCluster ns/zk; edit spec.config instead.
4lw.commands.whitelist=srvr,stat,mntr,ruok,conf
admin.enableServer=true
admin.serverPort=8080
connectToLearnerMasterLimit=2
dataDir=/data
initLimit=10
quorumListenOnAllIPs=true
reconfigEnabled=true
standaloneEnabled=false
syncLimit=5
tickTime=2000
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newZK(tc.mutate)
			got := build.ZooCfg(zk)
			if got != tc.want {
				t.Errorf("ZooCfg:\n%s\nwant:\n%s", got, tc.want)
			}
			for range 20 { // map iteration order must not show
				if again := build.ZooCfg(zk); again != got {
					t.Fatalf("ZooCfg is not deterministic:\n%s\nthen\n%s", got, again)
				}
			}
		})
	}
}

func TestDynamicConfig(t *testing.T) {
	zk := newZK(nil)
	for _, tc := range []struct {
		name string
		ids  []int
		want string
	}{
		{"none", nil, ""},
		{"one", []int{1}, "server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181\n"},
		{"three out of order", []int{3, 1, 2}, `server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
server.2=zk-1.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
server.3=zk-2.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
`},
		{"gap", []int{1, 3}, `server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
server.3=zk-2.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := build.Members(zk, tc.ids, "")
			got := build.DynamicConfig(members)
			if got != tc.want {
				t.Errorf("DynamicConfig:\n%s\nwant:\n%s", got, tc.want)
			}
			// What the builder writes, zkclient reads back as the same
			// members, valid ones.
			parsed, err := zkclient.ParseConfig([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			if len(parsed.Members) != len(members) {
				t.Fatalf("parsed %d members, want %d", len(parsed.Members), len(members))
			}
			for _, m := range members {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				if !parsed.Members[m.ID].Equal(m) {
					t.Errorf("member %d parsed as %v, built as %v", m.ID, parsed.Members[m.ID], m)
				}
			}
		})
	}
	if got := build.IDs(3); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("IDs(3) = %v", got)
	}
}

func TestConfigData(t *testing.T) {
	zk := newZK(nil)
	data := build.ConfigData(zk)
	if want := map[string]string{build.ZooCfgKey: build.ZooCfg(zk)}; !maps.Equal(data, want) {
		t.Errorf("ConfigData() = %v, want %v", data, want)
	}
	if got, want := build.ConfigRevision(data), standard.ConfigHash(data); got != want {
		t.Errorf("ConfigRevision() = %s, want %s", got, want)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*zkv1.ZookeeperClusterSpec)
		same   bool
	}{
		{"same content", nil, true},
		// Membership is in the members ConfigMap: the config ConfigMap,
		// and so the pods, stay the same when the ensemble grows.
		{"replicas only: same ConfigMap and revision", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 5 }, true},
		{"zoo.cfg: new ConfigMap and revision", func(s *zkv1.ZookeeperClusterSpec) { s.Config = map[string]string{"tickTime": "1"} }, false},
		{"admin port: new ConfigMap and revision", func(s *zkv1.ZookeeperClusterSpec) { s.AdminPort = 9090 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := build.ConfigData(newZK(tc.mutate))
			if _, ok := other[build.DynamicConfigKey]; ok {
				t.Errorf("ConfigData() has %s; membership belongs in the members ConfigMap", build.DynamicConfigKey)
			}
			if got := build.ConfigRevision(data) == build.ConfigRevision(other); got != tc.same {
				t.Errorf("same revision = %t, want %t", got, tc.same)
			}
			nameA := standard.ConfigMapName(zk.Name, build.ComponentConfig, data)
			nameB := standard.ConfigMapName(zk.Name, build.ComponentConfig, other)
			if got := nameA == nameB; got != tc.same {
				t.Errorf("same ConfigMap name = %t (%s, %s), want %t", got, nameA, nameB, tc.same)
			}
		})
	}
}

func TestMembersConfigMap(t *testing.T) {
	zk := newZK(nil)
	for _, tc := range []struct {
		name string
		ids  []int
		want string
	}{
		{"one", []int{1}, "server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181\n"},
		{"three", []int{1, 2, 3}, `server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
server.2=zk-1.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
server.3=zk-2.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := build.MembersConfigMap(zk, build.Members(zk, tc.ids, ""), nil)
			if cm.Name != "zk-members" || cm.Name != build.MembersConfigMapName(zk) || cm.Namespace != "ns" {
				t.Errorf("MembersConfigMap() name = %s/%s, want ns/zk-members", cm.Namespace, cm.Name)
			}
			if want := build.Labels(zk, build.ComponentMembers); !maps.Equal(cm.Labels, want) {
				t.Errorf("MembersConfigMap() labels = %v, want %v", cm.Labels, want)
			}
			if want := map[string]string{build.DynamicConfigKey: tc.want}; !maps.Equal(cm.Data, want) {
				t.Errorf("MembersConfigMap() data = %q, want %q", cm.Data, want)
			}
			// It changes in place, so it must not be immutable.
			if ptr.Deref(cm.Immutable, false) {
				t.Error("MembersConfigMap() is immutable")
			}
		})
	}
}

// TestMembersConfigMapJoining checks that a joining server's line is kept
// apart from the committed members, so that no server but the joiner
// counts it as a voter.
func TestMembersConfigMapJoining(t *testing.T) {
	zk := newZK(nil)
	joiner := build.Members(zk, []int{4}, "")[0]
	cm := build.MembersConfigMap(zk, build.Members(zk, build.IDs(3), ""), &joiner)
	if got := cm.Data[build.DynamicConfigKey]; strings.Contains(got, "server.4=") || strings.Count(got, "server.") != 3 {
		t.Errorf("zoo.cfg.dynamic = %q, want the 3 committed members only", got)
	}
	want := "server.4=zk-3.zk-headless.ns.svc.cluster.local:2888:3888:participant;0.0.0.0:2181\n"
	if got := cm.Data[build.JoiningConfigKey]; got != want {
		t.Errorf("zoo.cfg.joining = %q, want %q", got, want)
	}
}

func TestCredentialsSecret(t *testing.T) {
	zk := newZK(nil)
	for _, tc := range []struct {
		name     string
		password string
	}{
		{"generated", "c2VjcmV0LXBhc3N3b3JkLTEyMzQ1Njc4OTA"},
		{"other", "another password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build.CredentialsSecret(zk, tc.password)
			if s.Name != "zk-credentials" || s.Name != build.CredentialsSecretName(zk) || s.Namespace != "ns" {
				t.Errorf("CredentialsSecret() name = %s/%s, want ns/zk-credentials", s.Namespace, s.Name)
			}
			if want := build.Labels(zk, build.ComponentCredentials); !maps.Equal(s.Labels, want) {
				t.Errorf("CredentialsSecret() labels = %v, want %v", s.Labels, want)
			}
			if s.Type != corev1.SecretTypeOpaque {
				t.Errorf("CredentialsSecret() type = %s, want %s", s.Type, corev1.SecretTypeOpaque)
			}
			if got := slices.Sorted(maps.Keys(s.Data)); !slices.Equal(got, []string{build.SuperDigestKey, build.SuperPasswordKey}) {
				t.Errorf("CredentialsSecret() keys = %v, want %s and %s", got, build.SuperDigestKey, build.SuperPasswordKey)
			}
			if got := string(s.Data[build.SuperPasswordKey]); got != tc.password {
				t.Errorf("CredentialsSecret() %s = %q, want %q", build.SuperPasswordKey, got, tc.password)
			}
			if got, want := string(s.Data[build.SuperDigestKey]), zkclient.SuperDigest(tc.password); got != want {
				t.Errorf("CredentialsSecret() %s = %q, want %q", build.SuperDigestKey, got, want)
			}
		})
	}
	if build.SuperPasswordKey != "superPassword" || build.SuperDigestKey != "superDigest" {
		t.Errorf("keys %q, %q; want superPassword, superDigest", build.SuperPasswordKey, build.SuperDigestKey)
	}
}

func TestHeadlessService(t *testing.T) {
	svc := build.HeadlessService(newZK(nil))
	if svc.Name != "zk-headless" || svc.Namespace != "ns" {
		t.Errorf("name %s/%s", svc.Namespace, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("clusterIP %q, publishNotReadyAddresses %t", svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if got := servicePorts(svc); got != "client:2181->client quorum:2888->quorum election:3888->election" {
		t.Errorf("ports %s", got)
	}
	checkSelectsServers(t, svc.Spec.Selector)
}

func TestClientService(t *testing.T) {
	for _, tc := range []struct {
		name        string
		svc         zkv1.ClientServiceSpec
		wantType    corev1.ServiceType
		wantNode    int32
		annotations map[string]string
	}{
		{"default ClusterIP", zkv1.ClientServiceSpec{}, corev1.ServiceTypeClusterIP, 0, nil},
		{"NodePort allocated", zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort}, corev1.ServiceTypeNodePort, 0, nil},
		{"NodePort chosen", zkv1.ClientServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30181)}, corev1.ServiceTypeNodePort, 30181, nil},
		{"LoadBalancer with annotations", zkv1.ClientServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, NodePort: ptr.To[int32](30182), Annotations: map[string]string{"lb": "internal"},
		}, corev1.ServiceTypeLoadBalancer, 30182, map[string]string{"lb": "internal"}},
		{"stray nodePort on ClusterIP is ignored", zkv1.ClientServiceSpec{
			Type: corev1.ServiceTypeClusterIP, NodePort: ptr.To[int32](30181),
		}, corev1.ServiceTypeClusterIP, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newZK(func(s *zkv1.ZookeeperClusterSpec) { s.ClientService = tc.svc })
			svc := build.ClientService(zk)
			if svc.Name != "zk-client" || svc.Spec.Type != tc.wantType {
				t.Errorf("name %s, type %s; want zk-client, %s", svc.Name, svc.Spec.Type, tc.wantType)
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 2181 || svc.Spec.Ports[0].NodePort != tc.wantNode {
				t.Errorf("ports %+v, want 2181 with node port %d", svc.Spec.Ports, tc.wantNode)
			}
			if svc.Spec.PublishNotReadyAddresses {
				t.Error("the client Service must route to serving servers only")
			}
			if !maps.Equal(svc.Annotations, tc.annotations) {
				t.Errorf("annotations %v, want %v", svc.Annotations, tc.annotations)
			}
			checkSelectsServers(t, svc.Spec.Selector)
		})
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int32
		max      *int32
		want     int
	}{
		{"default", 3, nil, 1},
		{"none", 3, ptr.To[int32](0), 0},
		{"five", 5, ptr.To[int32](2), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := build.PodDisruptionBudget(newZK(func(s *zkv1.ZookeeperClusterSpec) {
				s.Replicas, s.MaxUnavailable = tc.replicas, tc.max
			}))
			if pdb.Name != "zk" || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != tc.want {
				t.Errorf("PDB %s maxUnavailable %v, want %d", pdb.Name, pdb.Spec.MaxUnavailable, tc.want)
			}
			if pdb.Spec.MinAvailable != nil {
				t.Error("minAvailable set")
			}
			checkSelectsServers(t, pdb.Spec.Selector.MatchLabels)
		})
	}
}

func TestStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*zkv1.ZookeeperClusterSpec)
		replicas int32
		check    func(t *testing.T, sts *appsv1.StatefulSet)
	}{
		{"defaults", nil, 3, func(t *testing.T, sts *appsv1.StatefulSet) {
			s := sts.Spec
			if *s.Replicas != 3 || s.ServiceName != "zk-headless" || s.PodManagementPolicy != appsv1.ParallelPodManagement ||
				s.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
				t.Errorf("replicas %d, serviceName %s, policy %s, update %s", *s.Replicas, s.ServiceName, s.PodManagementPolicy, s.UpdateStrategy.Type)
			}
			if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
				p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				t.Errorf("retention %+v, want Retain/Retain", p)
			}
			vct := s.VolumeClaimTemplates[0]
			if vct.Name != "data" || vct.Spec.StorageClassName != nil ||
				!vct.Spec.Resources.Requests.Storage().Equal(resource.MustParse("1Gi")) {
				t.Errorf("claim template %s class %v size %v", vct.Name, vct.Spec.StorageClassName, vct.Spec.Resources.Requests.Storage())
			}
			pod := s.Template.Spec
			aff := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			if len(aff) != 1 || aff[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
				t.Errorf("default anti-affinity %+v", aff)
			}
			checkSelectsServers(t, aff[0].PodAffinityTerm.LabelSelector.MatchLabels)
			c := pod.Containers[0]
			if c.Image != zkv1.DefaultImage || c.ImagePullPolicy != "" {
				t.Errorf("image %s, pull policy %q", c.Image, c.ImagePullPolicy)
			}
			if len(c.Env) != 3 || c.Env[0].Name != "ZK_HEAP" || c.Env[0].Value != "512m" {
				t.Errorf("env %+v, want ZK_HEAP=512m first of 3", c.Env)
			}
			if got := containerPorts(c); got != "client:2181 quorum:2888 election:3888 admin:8080" {
				t.Errorf("ports %s", got)
			}
		}},
		{"replicas are the controller's", func(s *zkv1.ZookeeperClusterSpec) { s.Replicas = 5 }, 4, func(t *testing.T, sts *appsv1.StatefulSet) {
			if *sts.Spec.Replicas != 4 {
				t.Errorf("replicas %d, want 4", *sts.Spec.Replicas)
			}
		}},
		{"storage and Delete policy", func(s *zkv1.ZookeeperClusterSpec) {
			s.Storage = commonv1.StorageSpec{Size: ptr.To(resource.MustParse("10Gi")), StorageClassName: ptr.To("fast"), ReclaimPolicy: commonv1.ReclaimDelete}
		}, 3, func(t *testing.T, sts *appsv1.StatefulSet) {
			// The controller deletes the claims, not the StatefulSet: deleting
			// the StatefulSet alone must not wipe the data.
			if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
				p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				t.Errorf("retention %+v, want Retain on delete and on scale, whatever the reclaim policy", p)
			}
			vct := sts.Spec.VolumeClaimTemplates[0]
			if ptr.Deref(vct.Spec.StorageClassName, "") != "fast" || !vct.Spec.Resources.Requests.Storage().Equal(resource.MustParse("10Gi")) {
				t.Errorf("claim template class %v size %v", vct.Spec.StorageClassName, vct.Spec.Resources.Requests.Storage())
			}
		}},
		{"placement, resources, heap, admin port", func(s *zkv1.ZookeeperClusterSpec) {
			s.Heap = "2g"
			s.AdminPort = 9090
			s.ImagePullPolicy = corev1.PullAlways
			s.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}
			s.NodeSelector = map[string]string{"disk": "ssd"}
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
			s.Tolerations = []corev1.Toleration{{Key: "zk", Operator: corev1.TolerationOpExists}}
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
			s.PriorityClassName = "high"
		}, 3, func(t *testing.T, sts *appsv1.StatefulSet) {
			pod := sts.Spec.Template.Spec
			if pod.Affinity.PodAntiAffinity != nil || pod.Affinity.NodeAffinity == nil {
				t.Errorf("affinity %+v, want spec.affinity instead of the default", pod.Affinity)
			}
			if pod.NodeSelector["disk"] != "ssd" || len(pod.Tolerations) != 1 || len(pod.TopologySpreadConstraints) != 1 || pod.PriorityClassName != "high" {
				t.Errorf("placement %v %v %v %q", pod.NodeSelector, pod.Tolerations, pod.TopologySpreadConstraints, pod.PriorityClassName)
			}
			c := pod.Containers[0]
			if c.Env[0].Value != "2g" || c.ImagePullPolicy != corev1.PullAlways || !c.Resources.Limits.Memory().Equal(resource.MustParse("3Gi")) {
				t.Errorf("heap %s, pull %s, limits %v", c.Env[0].Value, c.ImagePullPolicy, c.Resources.Limits)
			}
			if got := containerPorts(c); !strings.HasSuffix(got, "admin:9090") {
				t.Errorf("ports %s", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newZK(tc.mutate)
			before := zk.DeepCopy()
			sts := build.StatefulSet(zk, tc.replicas, "zk-config-0123456789", "rev")
			if !equality.Semantic.DeepEqual(zk, before) {
				t.Error("StatefulSet changed the cluster")
			}
			checkInvariants(t, sts)
			tc.check(t, sts)
		})
	}
}

// TestStatefulSetVolumeAndEnv checks the pod template's config volume,
// zoo.cfg and zoo.cfg.dynamic projected side by side from the two
// ConfigMaps, and the super user's digest handed to the JVM.
func TestStatefulSetVolumeAndEnv(t *testing.T) {
	for _, tc := range []struct {
		name, cluster, configMap string
		wantSources              []string
		wantSecret               string
	}{
		{"zk", "zk", "zk-config-0123456789", []string{"zk-config-0123456789", "zk-members"}, "zk-credentials"},
		{"names follow the cluster", "kafka-zk", "kafka-zk-config-abcdef0123", []string{"kafka-zk-config-abcdef0123", "kafka-zk-members"}, "kafka-zk-credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zk := newZK(nil)
			zk.Name = tc.cluster
			sts := build.StatefulSet(zk, 3, tc.configMap, "rev")
			pod := sts.Spec.Template.Spec

			var vol corev1.Volume
			for _, v := range pod.Volumes {
				if v.Name == build.ConfigVolume {
					vol = v
				}
			}
			if got := projectedConfigMaps(vol); !slices.Equal(got, tc.wantSources) {
				t.Errorf("config volume sources = %v, want %v (volume %+v)", got, tc.wantSources, vol)
			}
			if vol.Projected != nil {
				for _, src := range vol.Projected.Sources {
					// Whole ConfigMaps, both required: a server must not
					// start without zoo.cfg or its membership.
					if src.ConfigMap != nil && (len(src.ConfigMap.Items) != 0 || ptr.Deref(src.ConfigMap.Optional, false)) {
						t.Errorf("source %s: items %v, optional %v; want all keys, required", src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional)
					}
				}
			}
			// The two sources' files do not collide in /conf.
			cfgKeys := slices.Collect(maps.Keys(build.ConfigData(zk)))
			for k := range build.MembersConfigMap(zk, build.Members(zk, build.IDs(3), ""), &build.Members(zk, []int{4}, "")[0]).Data {
				if slices.Contains(cfgKeys, k) {
					t.Errorf("%s is in both the config and the members ConfigMap", k)
				}
			}

			env := pod.Containers[0].Env
			index := map[string]int{}
			var names []string
			for i, e := range env {
				index[e.Name] = i
				names = append(names, e.Name)
			}
			if got := slices.Sorted(maps.Keys(index)); !slices.Equal(got, []string{"ZK_HEAP", "ZK_JVM_OPTS", "ZK_SUPER_DIGEST"}) {
				t.Fatalf("env names = %v, want ZK_HEAP, ZK_JVM_OPTS, ZK_SUPER_DIGEST", got)
			}
			digest := env[index["ZK_SUPER_DIGEST"]]
			if digest.Value != "" || digest.ValueFrom == nil || digest.ValueFrom.SecretKeyRef == nil {
				t.Fatalf("ZK_SUPER_DIGEST = %+v, want a secretKeyRef", digest)
			}
			if ref := digest.ValueFrom.SecretKeyRef; ref.Name != tc.wantSecret || ref.Key != build.SuperDigestKey || ptr.Deref(ref.Optional, false) {
				t.Errorf("ZK_SUPER_DIGEST secretKeyRef = %s/%s (optional %v), want %s/%s, required",
					ref.Name, ref.Key, ref.Optional, tc.wantSecret, build.SuperDigestKey)
			}
			const wantOpts = "-Dzookeeper.DigestAuthenticationProvider.superDigest=$(ZK_SUPER_DIGEST) -Dzookeeper.cnxTimeout=2000" +
				" -Dzookeeper.leader.maxTimeToWaitForEpoch=100"
			if got := env[index["ZK_JVM_OPTS"]].Value; got != wantOpts {
				t.Errorf("ZK_JVM_OPTS = %q, want %q", got, wantOpts)
			}
			// The kubelet expands $(NAME) only for variables defined
			// earlier in the list; a later one stays literal.
			if index["ZK_SUPER_DIGEST"] > index["ZK_JVM_OPTS"] {
				t.Errorf("env order %v: ZK_SUPER_DIGEST must come before ZK_JVM_OPTS", names)
			}
			checkEnvReferences(t, env)
			// The servers get the digest, never the password.
			for _, e := range env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key == build.SuperPasswordKey {
					t.Errorf("%s exposes the super user's password to the servers", e.Name)
				}
			}
		})
	}
}

// envReference is a $(NAME) reference in an env value, which the kubelet
// expands ($$(NAME) escapes it).
var envReference = regexp.MustCompile(`\$?\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkEnvReferences checks that every $(NAME) in env's values refers to
// a variable defined earlier in env.
func checkEnvReferences(t *testing.T, env []corev1.EnvVar) {
	t.Helper()
	defined := map[string]bool{}
	for _, e := range env {
		for _, m := range envReference.FindAllStringSubmatch(e.Value, -1) {
			if !strings.HasPrefix(m[0], "$$") && !defined[m[1]] {
				t.Errorf("%s refers to $(%s), which is not defined before it", e.Name, m[1])
			}
		}
		defined[e.Name] = true
	}
}

// checkInvariants checks what every StatefulSet must have, whatever the
// spec.
func checkInvariants(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	if sts.Name != "zk" || sts.Namespace != "ns" {
		t.Errorf("name %s/%s", sts.Namespace, sts.Name)
	}
	checkSelectsServers(t, sts.Spec.Selector.MatchLabels)
	tmpl := sts.Spec.Template
	if !labels.SelectorFromSet(sts.Spec.Selector.MatchLabels).Matches(labels.Set(tmpl.Labels)) {
		t.Errorf("selector %v does not select the template's labels %v", sts.Spec.Selector.MatchLabels, tmpl.Labels)
	}
	if tmpl.Annotations[build.ConfigRevisionAnnotation] != "rev" {
		t.Errorf("template annotations %v", tmpl.Annotations)
	}
	pod := tmpl.Spec
	sc := pod.SecurityContext
	if !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.RunAsUser, 0) != 100 || ptr.Deref(sc.RunAsGroup, 0) != 101 || ptr.Deref(sc.FSGroup, 0) != 101 {
		t.Errorf("pod security context %+v", sc)
	}
	if ptr.Deref(pod.AutomountServiceAccountToken, true) || ptr.Deref(pod.EnableServiceLinks, true) {
		t.Error("service account token or service links enabled")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) || ptr.Deref(c.SecurityContext.AllowPrivilegeEscalation, true) {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts["/conf"]; m.Name != build.ConfigVolume || !m.ReadOnly {
		t.Errorf("/conf mount %+v", m)
	}
	if mounts["/data"].Name != build.DataVolume || mounts["/tmp"].Name != build.TmpVolume {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	if got := projectedConfigMaps(vols[build.ConfigVolume]); !slices.Equal(got, []string{"zk-config-0123456789", "zk-members"}) {
		t.Errorf("config volume sources %v, want the config and members ConfigMaps", got)
	}
	if vols[build.TmpVolume].EmptyDir == nil {
		t.Errorf("tmp volume %+v", vols[build.TmpVolume])
	}
	if _, ok := vols[build.DataVolume]; ok {
		t.Error("data is a pod volume, not the claim template")
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != build.DataVolume {
		t.Errorf("claim templates %+v", sts.Spec.VolumeClaimTemplates)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.Exec == nil || p.TimeoutSeconds == 0 {
			t.Errorf("%s probe %+v", name, p)
		}
	}
	if !strings.Contains(strings.Join(c.ReadinessProbe.Exec.Command, " "), "srvr") ||
		!strings.Contains(strings.Join(c.LivenessProbe.Exec.Command, " "), "ruok") {
		t.Errorf("readiness %v, liveness %v", c.ReadinessProbe.Exec.Command, c.LivenessProbe.Exec.Command)
	}
	// The probes' four-letter words are among those zoo.cfg allows.
	for _, w := range []string{"srvr", "ruok"} {
		if !slices.Contains(strings.Split(build.FourLetterWords, ","), w) {
			t.Errorf("%s is not in %s", w, build.FourLetterWords)
		}
	}
}

// checkSelectsServers checks that sel is exactly the servers' stable
// selector.
func checkSelectsServers(t *testing.T, sel map[string]string) {
	t.Helper()
	want := build.Selector(newZK(nil), build.ComponentServer)
	if !maps.Equal(sel, want) {
		t.Errorf("selector %v, want %v", sel, want)
	}
	if _, ok := sel[standard.LabelPartOf]; ok {
		t.Error("selector has part-of")
	}
}

// projectedConfigMaps returns the ConfigMaps v projects, in order, or nil
// when v is not a projected volume of ConfigMaps alone.
func projectedConfigMaps(v corev1.Volume) []string {
	if v.Projected == nil || v.ConfigMap != nil {
		return nil
	}
	var names []string
	for _, src := range v.Projected.Sources {
		if src.ConfigMap == nil || src.Secret != nil || src.DownwardAPI != nil || src.ServiceAccountToken != nil {
			return nil
		}
		names = append(names, src.ConfigMap.Name)
	}
	return names
}

func servicePorts(svc *corev1.Service) string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, p.Name+":"+itoa(p.Port)+"->"+p.TargetPort.String())
	}
	return strings.Join(out, " ")
}

func containerPorts(c corev1.Container) string {
	var out []string
	for _, p := range c.Ports {
		out = append(out, p.Name+":"+itoa(p.ContainerPort))
	}
	return strings.Join(out, " ")
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
