//go:build bench

package matrixone

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	benchkube "github.com/stewardhq/steward/bench/internal/kube"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/test/smokeimage"
)

const (
	rounds     = 2
	probeImage = "localhost/steward-smoke:bench"
	idleWindow = time.Minute
)

// The roles' memory limits: MatrixOne sizes its caches from them.
var limits = map[build.Role]string{build.RoleLog: "384Mi", build.RoleTN: "768Mi", build.RoleCN: "640Mi", build.RoleProxy: "192Mi"}

type kube struct{ *benchkube.Kube }

func connect(b *testing.B) *kube {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	if err := smokeimage.Build(root, filepath.Join(root, ".cache", "localkube", "bin"), probeImage); err != nil {
		b.Fatal(err)
	}
	return &kube{benchkube.Connect(b, 50, 100, mov1.AddToScheme)}
}

// BenchmarkCreate starts the roles by hand and as a MatrixOneCluster,
// rounds times each; see the package documentation.
func BenchmarkCreate(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-mo", &mov1.MatrixOneCluster{})
	idle := k.IdleUsage(b, 20*time.Second)
	var hand, steward []time.Duration
	var requests, writes float64
	for b.Loop() {
		for i := range rounds {
			name := fmt.Sprintf("hand%d", i)
			d := k.byHand(b, ns, name)
			hand = append(hand, d)
			k.deleteByHand(b, ns, name)

			name = fmt.Sprintf("mo%d", i)
			before := k.OperatorUsage(b)
			start := time.Now()
			d, ready := k.withSteward(b, ns, name)
			used := k.OperatorUsage(b).Minus(before)
			share := idle.Over(time.Since(start))
			requests += used.Requests - share.Requests
			writes += used.Writes - share.Writes
			steward = append(steward, d)
			b.Logf("round %d: SQL served after %s by hand, %s with Steward (Ready after %s)", i,
				hand[i].Round(100*time.Millisecond), d.Round(100*time.Millisecond), ready.Round(100*time.Millisecond))
			k.deleteCluster(b, ns, name)
		}
	}
	n := float64(len(steward))
	b.ReportMetric(median(hand).Seconds(), "s-by-hand-to-sql")
	b.ReportMetric(median(steward).Seconds(), "s-apply-to-sql")
	b.ReportMetric(median(steward).Seconds()/median(hand).Seconds(), "ratio-to-by-hand")
	b.ReportMetric(requests/n, "api-requests/cluster")
	b.ReportMetric(writes/n, "api-writes/cluster")
	b.Logf("by hand %v, Steward %v; idle operator baseline %.0f requests/min (%.0f writes/min: leader election)",
		hand, steward, idle.Requests*60, idle.Writes*60)
}

// BenchmarkIdle holds one Ready cluster for idleWindow; see the package
// documentation.
func BenchmarkIdle(b *testing.B) {
	k := connect(b)
	ns := k.Namespace(b, "bench-mo-idle", &mov1.MatrixOneCluster{})
	for b.Loop() {
		k.withSteward(b, ns, "idle")
		k.ReportIdle(b, ns, 1, idleWindow, &mov1.MatrixOneClusterList{}, &mov1.LogSetList{}, &mov1.TNSetList{},
			&mov1.CNSetList{}, &mov1.ProxySetList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{},
			&corev1.ConfigMapList{}, &corev1.PodList{})
	}
}

// withSteward applies a MatrixOneCluster name and a probe, and returns
// when SQL was first served through its proxy and when it was Ready, both
// from the apply.
func (k *kube) withSteward(b *testing.B, ns, name string) (sql, ready time.Duration) {
	return k.withStewardAt(b, ns, name, shape{image: mov1.DefaultImage, logStores: 1, cns: 1})
}

// shape is a benchmark cluster's image and counts of log stores and CNs
// (one TN, one proxy).
type shape struct {
	image          string
	logStores, cns int32
}

// withStewardAt is withSteward of the shape.
func (k *kube) withStewardAt(b *testing.B, ns, name string, sh shape) (sql, ready time.Duration) {
	b.Helper()
	k.claim(b, ns, name)
	role := func(r build.Role) mov1.RoleSpec {
		return mov1.RoleSpec{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limits[r])}}}
	}
	small := commonv1.StorageSpec{Size: ptr.To(resource.MustParse("256Mi")), ReclaimPolicy: commonv1.ReclaimDelete}
	mc := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mov1.MatrixOneClusterSpec{
		Image: sh.image, ImagePullPolicy: corev1.PullNever,
		SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: name + "-shared"}},
		LogService:    mov1.LogServiceSpec{Replicas: sh.logStores, RoleSpec: role(build.RoleLog), Storage: small},
		TN:            mov1.TNSpec{RoleSpec: role(build.RoleTN), Storage: small},
		CNGroups:      []mov1.CNGroupSpec{{Name: "cn", Replicas: ptr.To(sh.cns), RoleSpec: role(build.RoleCN), Storage: small}},
		Proxy:         mov1.ProxySpec{Replicas: 1, RoleSpec: role(build.RoleProxy)},
	}}
	start := time.Now()
	if err := k.C.Create(b.Context(), mc); err != nil {
		b.Fatal(err)
	}
	k.probe(b, ns, name, name+"-proxy", name+"-log-root")
	sql = k.waitServed(b, ns, name, start)
	for {
		if err := k.C.Get(b.Context(), client.ObjectKeyFromObject(mc), mc); err != nil {
			b.Fatal(err)
		}
		if ok, _ := framework.IsReady(mc); ok {
			return sql, time.Since(start)
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%s not Ready after 10 minutes: %+v", name, mc.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// byHand creates the roles' objects as Steward's builders make them,
// without the operator, the CN once the TN's pod is ready, and returns
// when SQL was first served through the proxy.
func (k *kube) byHand(b *testing.B, ns, name string) time.Duration {
	return k.byHandAt(b, ns, name, shape{image: mov1.DefaultImage, logStores: 1, cns: 1})
}

// byHandAt is byHand of the shape.
func (k *kube) byHandAt(b *testing.B, ns, name string, sh shape) time.Duration {
	b.Helper()
	k.claim(b, ns, name)
	pods := func(r build.Role) *mov1.PodSetSpec {
		return &mov1.PodSetSpec{Image: sh.image, ImagePullPolicy: corev1.PullNever, RoleSpec: mov1.RoleSpec{
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limits[r])}}}}
	}
	small := &commonv1.StorageSpec{Size: ptr.To(resource.MustParse("256Mi"))}
	log := &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-log"}, Spec: mov1.LogSetSpec{
		Replicas: sh.logStores, PodSetSpec: *pods(build.RoleLog), Storage: *small,
		SharedStorage: mov1.SharedStorage{FileSystem: &mov1.FileSystemStorage{ClaimName: name + "-shared"}}}}
	mov1.DefaultLogSet(log)
	boot := build.LogBootstrap(log)
	log.Status.ServiceAddresses = build.LogServiceAddresses(log)
	logConfig, err := build.LogConfig(log, boot)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	k.create(b, build.RootPasswordSecret(log, "bench"), build.LogHeadlessService(log), build.LogGossipService(log),
		k.configMap(ns, name+"-log-config", build.LogTemplateFile, logConfig), build.LogStatefulSet(log, name+"-log-config"))
	set := func(role build.Role, suffix string, storage *commonv1.StorageSpec) build.StoreSet {
		return build.StoreSet{Namespace: ns, Name: name + "-" + suffix, Role: role, Replicas: 1, Pods: pods(role),
			Storage: storage, Log: log, ProxyEnabled: true, ServiceType: corev1.ServiceTypeClusterIP}
	}
	start1 := func(s build.StoreSet) {
		config, err := s.Config()
		if err != nil {
			b.Fatal(err)
		}
		objs := []client.Object{s.HeadlessService(), k.configMap(ns, s.Name+"-config", s.TemplateFile(), config), s.StatefulSet(s.Name + "-config")}
		if s.ServesSQL() {
			objs = append(objs, s.SQLService())
		}
		k.create(b, objs...)
	}
	start1(set(build.RoleTN, "tn", small))
	start1(set(build.RoleProxy, "proxy", nil))
	k.probe(b, ns, name, name+"-proxy", log.RootPasswordSecret())
	k.waitPodReady(b, ns, name+"-tn-0")
	cn := set(build.RoleCN, "cn", small)
	cn.Replicas = sh.cns
	start1(cn)
	return k.waitServed(b, ns, name, start)
}

func (k *kube) configMap(ns, name, file, text string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{file: text}}
}

func (k *kube) create(b *testing.B, objs ...client.Object) {
	b.Helper()
	for _, obj := range objs {
		if err := k.C.Create(b.Context(), obj); err != nil {
			b.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// claim creates the shared filesystem claim of cluster name.
func (k *kube) claim(b *testing.B, ns, name string) {
	b.Helper()
	k.create(b, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-shared"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
}

// probe starts the pod <name>-probe, which asks the proxy's Service
// "select 1" every 100 ms, as root with the password in secret, until it
// answers (smoke sql-wait).
func (k *kube) probe(b *testing.B, ns, name, proxy, secret string) {
	b.Helper()
	k.create(b, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-probe"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever,
			Args: []string{"sql-wait", "--timeout", "15m", "--server", fmt.Sprintf("%s.%s.svc:%d", proxy, ns, build.SQLPort),
				"--user", "root", "--password", "$(PASSWORD)"},
			Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: build.PasswordKey}}}}}},
	}})
}

// waitServed waits until the probe of cluster name succeeded and returns
// when it was first answered, from start.
func (k *kube) waitServed(b *testing.B, ns, name string, start time.Time) time.Duration {
	b.Helper()
	pod := name + "-probe"
	deadline := time.Now().Add(15 * time.Minute)
	for {
		p, err := k.CS.CoreV1().Pods(ns).Get(b.Context(), pod, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			raw, err := k.CS.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			at, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), "served ")
			served, err := time.Parse(time.RFC3339Nano, at)
			if !ok || err != nil {
				b.Fatalf("the probe printed %q", raw)
			}
			return served.Sub(start)
		case corev1.PodFailed:
			b.Fatalf("the probe of %s failed", name)
		}
		if time.Now().After(deadline) {
			b.Fatalf("no SQL served by %s", name)
		}
		time.Sleep(time.Second)
	}
}

func (k *kube) waitPodReady(b *testing.B, ns, name string) { k.waitPodOn(b, ns, name, "") }

// deleteByHand deletes what byHand made, and waits until its pods are
// gone; their claims go too.
func (k *kube) deleteByHand(b *testing.B, ns, name string) {
	b.Helper()
	for _, set := range []string{"log", "tn", "cn", "proxy"} {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + set}}
		if err := k.C.Delete(b.Context(), sts); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
	}
	k.waitGone(b, ns, name)
	claims := &corev1.PersistentVolumeClaimList{}
	if err := k.C.List(b.Context(), claims, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	for i := range claims.Items {
		if c := &claims.Items[i]; strings.HasPrefix(c.Name, "data-"+name+"-") || c.Name == name+"-shared" {
			if err := k.C.Delete(b.Context(), c); err != nil && !apierrors.IsNotFound(err) {
				b.Fatal(err)
			}
		}
	}
}

// deleteCluster deletes the MatrixOneCluster name (its volumes' policy is
// Delete) and its probe, and waits until its pods are gone.
func (k *kube) deleteCluster(b *testing.B, ns, name string) {
	b.Helper()
	mc := &mov1.MatrixOneCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k.C.Delete(b.Context(), mc); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	k.waitGone(b, ns, name)
	if err := k.C.Delete(b.Context(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-shared"}}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
}

// waitGone deletes the probe of cluster name and waits until none of the
// cluster's pods is left: the next cluster has the memory.
func (k *kube) waitGone(b *testing.B, ns, name string) {
	b.Helper()
	if err := k.CS.CoreV1().Pods(ns).Delete(b.Context(), name+"-probe", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		pods, err := k.CS.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return strings.HasPrefix(p.Name, name+"-") }) {
			return
		}
	}
	b.Fatalf("the pods of %s are not gone", name)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
