package build

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss/gpssconfig"
)

// cluster is a GpssCluster as the API server stores it: defaults applied.
func cluster(mutate ...func(*gpssv1.GpssCluster)) *gpssv1.GpssCluster {
	g := &gpssv1.GpssCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "ns"},
		Spec: gpssv1.GpssClusterSpec{
			Replicas: 2, Image: "gpss:2.0", ClusterID: "c1",
			Ports:          gpssv1.Ports{GRPC: 5000, Gpfdist: 8080, Cluster: 5001},
			GpfdistService: gpssv1.GpfdistServiceSpec{Type: corev1.ServiceTypeClusterIP},
		},
	}
	for _, m := range mutate {
		m(g)
	}
	gpssv1.Default(g)
	return g
}

func TestEtcdEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *gpssv1.GpssCluster
		want []string
	}{
		{name: "managed, one member by default", g: cluster(),
			want: []string{"http://orders-etcd-0.orders-etcd.ns.svc.cluster.local:2379"}},
		{name: "managed, three members", g: cluster(func(g *gpssv1.GpssCluster) {
			g.Spec.Etcd.Managed = &gpssv1.ManagedEtcd{Replicas: 3}
		}), want: []string{
			"http://orders-etcd-0.orders-etcd.ns.svc.cluster.local:2379",
			"http://orders-etcd-1.orders-etcd.ns.svc.cluster.local:2379",
			"http://orders-etcd-2.orders-etcd.ns.svc.cluster.local:2379",
		}},
		{name: "an existing etcd", g: cluster(func(g *gpssv1.GpssCluster) {
			g.Spec.Etcd.Endpoints = []string{"https://etcd.example:2379"}
		}), want: []string{"https://etcd.example:2379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EtcdEndpoints(tc.g, ""); !slices.Equal(got, tc.want) {
				t.Errorf("EtcdEndpoints = %v, want %v", got, tc.want)
			}
			if ManagesEtcd(tc.g) != (len(tc.g.Spec.Etcd.Endpoints) == 0) {
				t.Error("ManagesEtcd disagrees with spec.etcd.endpoints")
			}
		})
	}
}

func TestGpssJSON(t *testing.T) {
	g := cluster(func(g *gpssv1.GpssCluster) {
		g.Spec.Ports = gpssv1.Ports{GRPC: 6000, Gpfdist: 9090, Cluster: 6001}
		g.Spec.Config = &runtime.RawExtension{Raw: []byte(`{"Logging":{"BackendLevel":"debug"}}`)}
	})
	out, err := GpssJSON(g, "k8s.internal")
	if err != nil {
		t.Fatal(err)
	}
	c, err := gpssconfig.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if c.ListenAddress.Port != 6000 || c.Gpfdist.Port != 9090 || c.Cluster.Port != 6001 || c.Cluster.ID != "c1" ||
		!slices.Equal(c.Cluster.Etcd.Endpoints, []string{"http://orders-etcd-0.orders-etcd.ns.svc.k8s.internal:2379"}) {
		t.Errorf("gpss.json:\n%s", out)
	}
	if !strings.Contains(string(out), `"BackendLevel": "debug"`) {
		t.Errorf("the user's settings are missing:\n%s", out)
	}
	data, err := ConfigData(g, "k8s.internal")
	if err != nil || data[ConfigKey] != string(out) {
		t.Errorf("ConfigData = %v, %v", data, err)
	}
}

func TestServices(t *testing.T) {
	g := cluster(func(g *gpssv1.GpssCluster) {
		g.Spec.GpfdistService = gpssv1.GpfdistServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Annotations: map[string]string{"lb.example/internal": "true"}}
	})
	grpc := GRPCService(g)
	if grpc.Name != "orders-grpc" || grpc.Spec.Ports[0].Port != 5000 || grpc.Spec.Type != "" ||
		grpc.Spec.Selector["app.kubernetes.io/component"] != ComponentInstance {
		t.Errorf("gRPC Service: %+v", grpc.Spec)
	}
	for ordinal, want := range []string{"orders-0", "orders-1"} {
		svc := GpfdistService(g, ordinal)
		if svc.Name != want+"-gpfdist" || svc.Spec.Selector[appsv1.StatefulSetPodNameLabel] != want ||
			svc.Spec.Selector["app.kubernetes.io/instance"] != "orders" || svc.Spec.Type != corev1.ServiceTypeLoadBalancer ||
			svc.Spec.Ports[0].Port != 8080 || !svc.Spec.PublishNotReadyAddresses ||
			svc.Annotations["lb.example/internal"] != "true" || svc.Labels[LabelOrdinal] != []string{"0", "1"}[ordinal] {
			t.Errorf("gpfdist Service %d: %+v %+v", ordinal, svc.ObjectMeta, svc.Spec)
		}
	}
	// The annotations are the Service's own copy.
	GpfdistService(g, 0).Annotations["x"] = "y"
	if _, ok := g.Spec.GpfdistService.Annotations["x"]; ok {
		t.Error("a Service's annotations alias the spec's")
	}
	if h := HeadlessService(g); h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service: %+v", h.Spec)
	}
}

func TestServiceAccount(t *testing.T) {
	if sa := ServiceAccount(cluster()); sa == nil || sa.Name != "orders-gpss" || *sa.AutomountServiceAccountToken {
		t.Errorf("own ServiceAccount: %+v", sa)
	}
	theirs := cluster(func(g *gpssv1.GpssCluster) { g.Spec.ServiceAccountName = "gpss-reader" })
	if ServiceAccount(theirs) != nil || ServiceAccountName(theirs) != "gpss-reader" {
		t.Error("with spec.serviceAccountName the operator still makes its own")
	}
}

func TestStatefulSet(t *testing.T) {
	g := cluster(func(g *gpssv1.GpssCluster) {
		g.Spec.ImagePullPolicy = corev1.PullNever
		g.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
		g.Spec.PodPlacement = commonv1.PodPlacement{NodeSelector: map[string]string{"disk": "ssd"}}
	})
	sts := StatefulSet(g, 3, "gpss:1.9", "orders-config-abc")
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	switch {
	case *sts.Spec.Replicas != 3, sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType,
		sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement, sts.Spec.ServiceName != "orders-headless":
		t.Errorf("StatefulSet spec: %+v", sts.Spec)
	case c.Image != "gpss:1.9" || c.ImagePullPolicy != corev1.PullNever || !slices.Equal(c.Args, []string{"/etc/gpss/gpss.json"}):
		t.Errorf("container: image %s, pull %s, args %v", c.Image, c.ImagePullPolicy, c.Args)
	case pod.Volumes[0].ConfigMap.Name != "orders-config-abc" || c.VolumeMounts[0].MountPath != "/etc/gpss":
		t.Errorf("config volume: %+v, mounts %+v", pod.Volumes, c.VolumeMounts)
	case pod.ServiceAccountName != "orders-gpss" || *pod.AutomountServiceAccountToken:
		t.Errorf("service account %q, automount %v", pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
	case pod.NodeSelector["disk"] != "ssd" || pod.Affinity == nil:
		t.Errorf("placement: %v, %v", pod.NodeSelector, pod.Affinity)
	case c.Resources.Limits.Memory().String() != "256Mi":
		t.Errorf("resources: %v", c.Resources)
	case c.ReadinessProbe.TCPSocket == nil || c.ReadinessProbe.TCPSocket.Port.StrVal != PortNameGRPC:
		t.Errorf("readiness: %+v", c.ReadinessProbe)
	case len(sts.Spec.Template.Spec.ReadinessGates) != 1 || sts.Spec.Template.Spec.ReadinessGates[0].ConditionType != ServingCondition:
		t.Errorf("readiness gates: %+v, want the serving condition", sts.Spec.Template.Spec.ReadinessGates)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Error("GPSS instances keep their state in etcd, not on volumes")
	}
}

func TestEtcdStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		name        string
		managed     *gpssv1.ManagedEtcd
		wantMembers int
		wantSize    string
		wantClass   *string
		wantImage   string
	}{
		{name: "defaults", wantMembers: 1, wantSize: "1Gi", wantImage: gpssv1.DefaultEtcdImage},
		{name: "three members on a class", managed: &gpssv1.ManagedEtcd{Replicas: 3, Image: "etcd:3.6.9",
			Storage: commonv1.StorageSpec{Size: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("fast")}},
			wantMembers: 3, wantSize: "5Gi", wantClass: ptr.To("fast"), wantImage: "etcd:3.6.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := cluster(func(g *gpssv1.GpssCluster) { g.Spec.Etcd.Managed = tc.managed })
			sts := EtcdStatefulSet(g, "")
			c := sts.Spec.Template.Spec.Containers[0]
			var initial string
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
					initial = v
				}
			}
			members := strings.Split(initial, ",")
			if len(members) != tc.wantMembers || *sts.Spec.Replicas != int32(tc.wantMembers) ||
				members[0] != "orders-etcd-0=http://orders-etcd-0.orders-etcd.ns.svc.cluster.local:2380" {
				t.Errorf("initial cluster %q for %d replicas", initial, *sts.Spec.Replicas)
			}
			claim := sts.Spec.VolumeClaimTemplates[0]
			if claim.Spec.Resources.Requests.Storage().String() != tc.wantSize ||
				!ptrEqual(claim.Spec.StorageClassName, tc.wantClass) || c.Image != tc.wantImage {
				t.Errorf("claim %+v, image %s", claim.Spec, c.Image)
			}
			if !slices.Contains(c.Args, "--advertise-client-urls=http://$(POD_NAME).orders-etcd.ns.svc.cluster.local:2379") {
				t.Errorf("args %v", c.Args)
			}
		})
	}
	if s := EtcdService(cluster()); s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses || s.Name != "orders-etcd" {
		t.Errorf("etcd Service: %+v", s)
	}
}

func ptrEqual(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
