//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// moLogStores is how many log stores the image test bootstraps together.
const moLogStores = 3

// matrixoneImageSpec runs real MatrixOne from its image the way the
// MatrixOne controllers do, without them: the configuration templates
// build.Render writes, started by mo-agent in StatefulSets with a
// volume each and one shared filesystem claim, HAKeeper's view read from a
// log pod's probe with the operator's reader. Three log stores bootstrap
// together as HAKeeper's initial members; a TN, a CN and a proxy join;
// SQL goes through the proxy; the log store holding shard 0's leader is
// deleted while a client writes, and every acknowledged write is there at
// the end. About 2.3 GiB of memory limits, 1.5 GiB used; its namespace is
// gone before the next spec starts.
func matrixoneImageSpec(t *testing.T, in specInput) {
	archive := in.archive(t, "matrixone")
	if out, err := localkube("load-image", archive); err != nil {
		fatalf(t, "load the MatrixOne image: %v: %s", err, out)
	}
	// Cleanups run last first: this one after newNamespace's deletion.
	var ns string
	t.Cleanup(func() { waitNamespaceGone(t, ns) })
	ns = newNamespace(t, "mo")
	m := &moTrial{t: t, ns: ns, image: archiveImage(t, archive)}
	t.Cleanup(func() {
		if t.Failed() {
			m.dump()
		}
	})
	m.create()
	startClient(t, ns) // the test's SQL and HTTP go through it

	view := m.waitView()
	t.Logf("HAKeeper: %s at tick %d; shards %v; %d log, %d TN, %d CN, %d proxy stores", view.State, view.Tick,
		shardLeaders(view), len(view.LogStores), len(view.TNStores), len(view.CNStores), len(view.ProxyStores))

	m.sql("create database if not exists e2e")
	m.sql("create table if not exists e2e.t (id int primary key)")
	acked := []int{}
	write := func(id int) bool {
		if _, err := m.trySQL(fmt.Sprintf("insert into e2e.t values (%d)", id)); err != nil {
			return false
		}
		acked = append(acked, id)
		return true
	}
	if !write(0) {
		fatalNow(t, "the first write through the proxy failed")
	}

	// The store of shard 0's leader goes; its pod comes back under its
	// name, with its volume, as the same store.
	leader := view.LogShards[0].Replicas[view.LogShards[0].LeaderID]
	pod := ""
	for i := range moLogStores {
		if wire.StoreID(ns, fmt.Sprintf("mo-log-%d", i)) == leader {
			pod = fmt.Sprintf("mo-log-%d", i)
		}
	}
	if pod == "" {
		fatalf(t, "shard 0's leader %s is no log pod's store", leader)
	}
	if err := env.client.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
		fatalNow(t, err)
	}
	failed := 0
	deadline := time.Now().Add(30 * time.Second)
	for id := 1; time.Now().Before(deadline); id++ {
		if !write(id) {
			failed++
		}
	}
	t.Logf("%s (shard 0's leader) deleted: %d writes acknowledged in the 30 s after, %d failed", pod, len(acked)-1, failed)
	if len(acked) < 2 {
		fatalNow(t, "no write acknowledged in the 30 s after a log store was deleted")
	}
	after := m.waitView()
	if s, ok := after.LogStore(leader); !ok || s.State != wire.StoreUp {
		errorf(t, "the deleted pod's store %s is not back up: %+v", leader, s)
	}

	// A write that failed may still have been applied (MatrixOne answered
	// an error for a commit that went through): every acknowledged one
	// must be there, and nothing else is required.
	out := m.sql("select id from e2e.t order by id")
	have := map[int]bool{}
	for _, f := range strings.Fields(out) {
		if id, err := strconv.Atoi(f); err == nil {
			have[id] = true
		}
	}
	for _, id := range acked {
		if !have[id] {
			errorf(t, "acknowledged write %d is missing", id)
		}
	}
}

// moTrial is the state of TestMatrixOneImage.
type moTrial struct {
	t     *testing.T
	ns    string
	image string
}

// roles are the trial's sets: replicas, memory limit, GOMEMLIMIT.
var moRoles = []struct {
	role     build.Role
	name     string
	replicas int32
	memory   string
	goMemory string
	ports    []int32
}{
	{build.RoleLog, "log", moLogStores, "384Mi", "300MiB", []int32{build.LogRaftPort, build.LogServicePort, build.LogGossipPort}},
	{build.RoleTN, "tn", 1, "768Mi", "600MiB", []int32{build.TNPortBase}},
	{build.RoleCN, "cn", 1, "768Mi", "600MiB", []int32{build.SQLPort}},
	{build.RoleProxy, "proxy", 1, "192Mi", "150MiB", []int32{build.SQLPort}},
}

func (m *moTrial) host(set string) string { return "${POD_NAME}.mo-" + set + "." + m.ns + ".svc" }

func (m *moTrial) logAddress(i, port int) string {
	return fmt.Sprintf("mo-log-%d.mo-log.%s.svc:%d", i, m.ns, port)
}

// templates renders each role's configuration as the controllers will.
func (m *moTrial) templates() map[string]string {
	var services, seeds, members []string
	for i := range moLogStores {
		services = append(services, m.logAddress(i, build.LogServicePort))
		seeds = append(seeds, m.logAddress(i, build.LogGossipPort))
		members = append(members, fmt.Sprintf("%d:%s", 131072+i, wire.StoreID(m.ns, fmt.Sprintf("mo-log-%d", i))))
	}
	quiet := "[observability]\ndisableTrace = true\ndisableMetric = true\n"
	files := map[string]string{}
	for _, r := range moRoles {
		limit := resource.MustParse(r.memory)
		tmpl := build.Template{Role: r.role, HAKeeper: services, Memory: build.MemoryFor(r.role, limit.Value()), User: quiet}
		switch r.role {
		case build.RoleLog:
			tmpl.Host = m.host("log")
			tmpl.Log = &build.LogTemplate{DeploymentID: 1, GossipSeeds: seeds, Shards: 1, Replicas: moLogStores, InitialMembers: members}
		case build.RoleTN:
			tmpl.Host = m.host("tn")
		case build.RoleCN:
			tmpl.Host, tmpl.ProxyEnabled = "${POD_IP}", true
		}
		text, err := build.Render(tmpl)
		if err != nil {
			fatalNow(m.t, err)
		}
		files[r.name+".toml"] = text
	}
	return files
}

func (m *moTrial) create() {
	ctx := context.Background()
	c := env.client
	if _, err := c.CoreV1().ConfigMaps(m.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "mo-config"}, Data: m.templates(),
	}, metav1.CreateOptions{}); err != nil {
		fatalNow(m.t, err)
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(m.ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "mo-shared"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{}); err != nil {
		fatalNow(m.t, err)
	}
	for _, r := range moRoles {
		name := "mo-" + r.name
		labels := map[string]string{"app": name}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: labels}}
		for _, p := range r.ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p})
		}
		if _, err := c.CoreV1().Services(m.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			fatalNow(m.t, err)
		}
		if _, err := c.AppsV1().StatefulSets(m.ns).Create(ctx, m.statefulSet(name, labels, r.name, r.replicas, r.memory, r.goMemory), metav1.CreateOptions{}); err != nil {
			fatalNow(m.t, err)
		}
	}
}

func (m *moTrial) statefulSet(name string, labels map[string]string, role string, replicas int32, memory, goMemory string) *appsv1.StatefulSet {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	limits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
	containers := []corev1.Container{{
		Name: "mo", Image: m.image, ImagePullPolicy: corev1.PullNever,
		Args: []string{"run", "/etc/matrixone/" + role + ".toml"},
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: field("metadata.name")}, {Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_IP", ValueFrom: field("status.podIP")}, {Name: "GOMEMLIMIT", Value: goMemory}},
		Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/matrixone"}, {Name: "tmp", MountPath: "/tmp"},
			{Name: "shared", MountPath: build.SharedMountPath}, {Name: "data", MountPath: build.DataDir}},
	}}
	if role == "log" {
		var addresses []string
		for i := range moLogStores {
			addresses = append(addresses, m.logAddress(i, build.LogServicePort))
		}
		containers = append(containers, corev1.Container{Name: "probe", Image: m.image, ImagePullPolicy: corev1.PullNever,
			Args:      []string{"probe", "--listen", ":7070", "--hakeeper", strings.Join(addresses, ",")},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}})
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: name, Replicas: ptr.To(replicas), PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
						FSGroup: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true)},
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					Containers:                    containers,
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mo-config"}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "shared", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mo-shared"}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
		},
	}
}

// waitView waits until a log pod's probe shows the whole cluster: HAKeeper
// running, every shard led by one of its moLogStores replicas, every log
// store up, and the TN, the CN (Working) and the proxy under the UUIDs
// derived from their pods.
func (m *moTrial) waitView() hakeeper.View {
	var view hakeeper.View
	eventually(m.t, 5*time.Minute, "HAKeeper's view of the whole cluster", func(ctx context.Context) error {
		var err error
		if view, err = m.view(ctx); err != nil {
			return err
		}
		switch {
		case !view.Running():
			return fmt.Errorf("HAKeeper is %s", view.State)
		case len(view.LeaderlessShards()) > 0:
			return fmt.Errorf("shards %v have no leader", view.LeaderlessShards())
		}
		for _, s := range view.LogShards {
			if len(s.Replicas) != moLogStores || s.NumberOfReplicas != moLogStores {
				return fmt.Errorf("shard %d has %d of %d replicas, want %d", s.ShardID, len(s.Replicas), s.NumberOfReplicas, moLogStores)
			}
		}
		for i := range moLogStores {
			id := wire.StoreID(m.ns, fmt.Sprintf("mo-log-%d", i))
			if s, ok := view.LogStore(id); !ok || s.State != wire.StoreUp {
				return fmt.Errorf("log store mo-log-%d (%s) is not up: %+v", i, id, s)
			}
		}
		if len(view.TNStores) != 1 || view.TNStores[0].UUID != wire.StoreID(m.ns, "mo-tn-0") {
			return fmt.Errorf("TN stores %+v", view.TNStores)
		}
		if len(view.CNStores) != 1 || view.CNStores[0].UUID != wire.StoreID(m.ns, "mo-cn-0") || view.CNStores[0].WorkState != wire.WorkStateWorking {
			return fmt.Errorf("CN stores %+v", view.CNStores)
		}
		if len(view.ProxyStores) != 1 || view.ProxyStores[0].UUID != wire.StoreID(m.ns, "mo-proxy-0") {
			return fmt.Errorf("proxy stores %+v", view.ProxyStores)
		}
		return nil
	})
	return view
}

// view asks the log pods' probes, in order, for the view, and returns the
// freshest answer.
func (m *moTrial) view(ctx context.Context) (hakeeper.View, error) {
	var views []hakeeper.View
	var errs []string
	for i := range moLogStores {
		pod, err := env.client.CoreV1().Pods(m.ns).Get(ctx, fmt.Sprintf("mo-log-%d", i), metav1.GetOptions{})
		if err != nil || pod.Status.PodIP == "" {
			errs = append(errs, fmt.Sprintf("mo-log-%d: no address (%v)", i, err))
			continue
		}
		out, err := kubectl("exec", "-n", m.ns, "client", "--", "/smoke", "get", fmt.Sprintf("http://%s:7070%s", pod.Status.PodIP, hakeeper.Path))
		if err != nil {
			errs = append(errs, fmt.Sprintf("mo-log-%d: %v: %s", i, err, strings.TrimSpace(out)))
			continue
		}
		var v hakeeper.View
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			errs = append(errs, fmt.Sprintf("mo-log-%d: %v", i, err))
			continue
		}
		views = append(views, v)
	}
	v, ok := hakeeper.Freshest(views)
	if !ok {
		return v, fmt.Errorf("no probe answered: %s", strings.Join(errs, "; "))
	}
	return v, nil
}

// trySQL runs a statement through the proxy as root (MatrixOne's default
// password: the controllers will generate one).
func (m *moTrial) trySQL(query string) (string, error) {
	return moSQL(m.ns, fmt.Sprintf("mo-proxy-0.mo-proxy.%s.svc:%d", m.ns, build.SQLPort), "111", query)
}

// moSQL runs a statement on MatrixOne at server (host:port) as root, with
// password, from the client pod of ns.
func moSQL(ns, server, password, query string) (string, error) {
	return moSQLAs(ns, server, "root", password, query)
}

// moSQLAs is moSQL as user ("account:user" for an account's user).
func moSQLAs(ns, server, user, password, query string) (string, error) {
	out, err := kubectl("exec", "-n", ns, "client", "--", "/smoke", "sql",
		"--server", server, "--user", user, "--password", password, query)
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", query, err, strings.TrimSpace(out))
	}
	return out, nil
}

// sql runs a statement through the proxy, retrying for a minute.
func (m *moTrial) sql(query string) string {
	var out string
	eventually(m.t, time.Minute, query, func(context.Context) error {
		var err error
		out, err = m.trySQL(query)
		return err
	})
	return out
}

func (m *moTrial) dump() {
	for _, args := range [][]string{
		{"get", "sts,pods,svc,pvc", "-n", m.ns, "-o", "wide"},
		{"get", "events", "-n", m.ns, "--sort-by=.lastTimestamp"},
	} {
		out, _ := kubectl(args...)
		m.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	pods, _ := env.client.CoreV1().Pods(m.ns).List(context.Background(), metav1.ListOptions{})
	for _, pod := range pods.Items {
		for _, c := range pod.Spec.Containers {
			out, _ := kubectl("logs", "-n", m.ns, pod.Name, "-c", c.Name, "--tail=30")
			m.t.Logf("kubectl logs %s -c %s:\n%s", pod.Name, c.Name, out)
		}
	}
}

// shardLeaders describes each shard as id:leader.
func shardLeaders(v hakeeper.View) []string {
	var out []string
	for _, s := range v.LogShards {
		out = append(out, fmt.Sprintf("%d:%d", s.ShardID, s.LeaderID))
	}
	slices.Sort(out)
	return out
}
