//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
)

// moUmbrellaSpec runs a MatrixOneCluster on real MatrixOne: one object
// making the log service, the TN, a group of two CNs and the proxy (named
// as the cluster spec's sets, so its writer and checks serve here too),
// Ready and serving SQL with the generated root password; a configuration
// change to every role at once, rolled in the order log service, CNs, TN,
// proxy under writes; deletion with the volumes retained and
// re-creation, which finds every acknowledged row; then the CN group
// handed to a real HorizontalPodAutoscaler and taken back. About 2.6 GiB
// of memory limits (3.2 GiB while the autoscaler runs three CNs).
func moUmbrellaSpec(t *testing.T, in specInput) {
	installOperator(t)
	m := &moCluster{scenario: newScenario(t, "mou", "matrixonecluster", "mo", "cn"), image: in.image(t, "matrixone")}
	u := &moUmbrella{moCluster: m, sharedStorage: "{fileSystem: {claimName: mo-shared, size: 1Gi}}", sharedClaim: "mo-shared", cns: 2}
	m.runSteps(t, m.dumpState, []step{
		{"create", u.create},
		{"a configuration change rolled in order under writes", u.rollInOrder},
		{"delete with retained volumes and re-create", u.recreate},
		{"a CN group handed to a HorizontalPodAutoscaler", u.autoscaled},
	})
}

// moUmbrella is a MatrixOneCluster "mo", whose sets are named as the
// cluster spec's, so that moCluster's writer and checks serve it.
type moUmbrella struct {
	*moCluster
	// sharedStorage is spec.sharedStorage, in YAML's flow style.
	sharedStorage string
	// sharedClaim is the volume claim the shared storage is on, "" for
	// none (S3).
	sharedClaim string
	// otherClaims are the namespace's volume claims that are not the
	// cluster's: a backup destination.
	otherClaims []string
	// cns is the CN group's replicas.
	cns int
	// cnMemory is each CN's memory limit; "" for 640Mi.
	cnMemory string
	// logStores and proxies are the log service's and the proxy's
	// replicas; 0 for 1.
	logStores, proxies int
}

// moClusterPods selects the pods of MatrixOne's sets, not a BackupJob's,
// nor a backup gateway's (it runs while Backups on its volume claim exist,
// whatever became of the cluster).
const moClusterPods = "app.kubernetes.io/name=matrixone,app.kubernetes.io/component notin (backup,backup-gateway)"

func (u *moUmbrella) manifest(level string) string {
	config := fmt.Sprintf("    config: |\n      [log]\n      level = %q\n      [observability]\n      disableTrace = true\n      disableMetric = true\n", level)
	return fmt.Sprintf(`apiVersion: matrixone.steward.dev/v1alpha1
kind: MatrixOneCluster
metadata: {name: mo, namespace: %[1]s}
spec:
  image: %[2]s
  imagePullPolicy: Never
  sharedStorage: %[4]s
  logService:
    replicas: %[7]d
    resources: {limits: {memory: 384Mi}}
    storage: {size: 256Mi}
%[3]s  tn:
    resources: {limits: {memory: 768Mi}}
    storage: {size: 512Mi}
%[3]s  cnGroups:
  - name: cn
    replicas: %[5]d
    resources: {limits: {memory: %[6]s}}
    storage: {size: 256Mi}
%[3]s  proxy:
    replicas: %[8]d
    resources: {limits: {memory: 192Mi}}
%[3]s`, u.ns, u.image, config, u.sharedStorage, u.cns, cmp.Or(u.cnMemory, "640Mi"), max(u.logStores, 1), max(u.proxies, 1))
}

func (u *moUmbrella) waitReady(timeout time.Duration) *mov1.MatrixOneCluster {
	u.t.Helper()
	mc := &mov1.MatrixOneCluster{}
	eventually(u.t, timeout, "the MatrixOneCluster Ready", func(context.Context) error {
		u.getInto(mc)
		return settled(mc.Generation, &mc.Status.StatusCore)
	})
	return mc
}

// create applies the cluster alone: its LogSet makes the shared claim the
// spec sizes, if any. It returns how long the cluster took to be Ready.
func (u *moUmbrella) create(t *testing.T) { u.createTimed(t) }

func (u *moUmbrella) createTimed(t *testing.T) time.Duration {
	start := time.Now()
	if out, err := kubectlStdin(u.manifest("info"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	u.startClient()
	mc := u.waitReady(6 * time.Minute)
	took := time.Since(start)
	t.Logf("Ready after %s: SQL at %s, root's password in Secret %s", took.Round(time.Second),
		mc.Status.SQLAddress, mc.Status.RootPasswordSecret)
	if mc.Status.SQLAddress != fmt.Sprintf("%s.%s.svc:6001", moClusterProxy, u.ns) || mc.Status.RootPasswordSecret != moClusterLog+"-root" {
		errorf(t, "status %+v", mc.Status)
	}
	if u.sharedClaim != "" {
		claim, err := env.client.CoreV1().PersistentVolumeClaims(u.ns).Get(context.Background(), u.sharedClaim, metav1.GetOptions{})
		if err != nil || claim.Labels["app.kubernetes.io/component"] != "shared" || len(claim.OwnerReferences) != 0 {
			errorf(t, "the shared claim the LogSet makes: %v %+v", err, claim)
		}
	}
	eventually(t, 2*time.Minute, "SQL through the proxy", func(context.Context) error {
		_, err := u.sql("create database if not exists e2e")
		return err
	})
	if _, err := u.sql("create table if not exists e2e.t (id int primary key)"); err != nil {
		fatalNow(t, err)
	}
	return took
}

// rollInOrder changes every role's configuration at once, under writes;
// the pods restart in the order log store, CNs, TN, proxy: each role's
// first new pod is created after the previous role's last.
func (u *moUmbrella) rollInOrder(t *testing.T) {
	before := u.podUIDs(t)
	u.underWrites(t, func() {
		if out, err := kubectlStdin(u.manifest("debug"), "apply", "-f", "-"); err != nil {
			fatalf(t, "%v: %s", err, out)
		}
		eventually(t, 10*time.Minute, "every pod restarted and the cluster Ready", func(context.Context) error {
			now := u.podUIDs(t)
			for pod, uid := range before {
				if now[pod] == uid {
					return fmt.Errorf("%s not restarted", pod)
				}
			}
			mc := &mov1.MatrixOneCluster{}
			u.getInto(mc)
			return settled(mc.Generation, &mc.Status.StatusCore)
		})
	})
	u.podsCreatedInOrder(t)
}

// podsCreatedInOrder checks that the cluster's pods were created in the
// rollout order, log store, CNs, TN, proxy: each role's first pod after
// the previous role's last.
func (u *moUmbrella) podsCreatedInOrder(t *testing.T) {
	t.Helper()
	created := map[string][2]time.Time{} // by role: first and last pod created
	for _, p := range u.pods(t) {
		role := p.Labels["app.kubernetes.io/component"]
		at := p.CreationTimestamp.Time
		span, ok := created[role]
		if !ok || at.Before(span[0]) {
			span[0] = at
		}
		if !ok || at.After(span[1]) {
			span[1] = at
		}
		created[role] = span
	}
	order := []string{"log", "cn", "tn", "proxy"}
	var line []string
	for _, role := range order {
		line = append(line, fmt.Sprintf("%s %s..%s", role, created[role][0].Format("15:04:05"), created[role][1].Format("15:04:05")))
	}
	t.Logf("Pods created: %s", strings.Join(line, ", "))
	for i := 1; i < len(order); i++ {
		if prev, next := created[order[i-1]][1], created[order[i]][0]; !next.After(prev) {
			errorf(t, "%s's first pod (%s) was created before %s's last (%s)", order[i], next.Format(time.TimeOnly), order[i-1], prev.Format(time.TimeOnly))
		}
	}
}

// recreate deletes the cluster (the default reclaim policy, Retain, keeps
// the volumes and the generated password), re-creates it, and finds every
// row written so far.
func (u *moUmbrella) recreate(t *testing.T) { u.recreateAround(t, nil) }

// recreateAround is recreate, calling deleted (when not nil) once the
// cluster's pods are gone, before the re-creation.
func (u *moUmbrella) recreateAround(t *testing.T, deleted func()) {
	out, err := u.sql("select count(*) from e2e.t")
	if err != nil {
		fatalNow(t, err)
	}
	rows := strings.TrimSpace(out)
	if out, err := kubectl("delete", "matrixonecluster", "mo", "-n", u.ns, "--wait=true", "--timeout=3m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 3*time.Minute, "every MatrixOne pod gone", func(ctx context.Context) error {
		pods, err := env.client.CoreV1().Pods(u.ns).List(ctx, metav1.ListOptions{LabelSelector: moClusterPods})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
	claims, err := env.client.CoreV1().PersistentVolumeClaims(u.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	var names []string
	for _, c := range claims.Items {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	want := []string{"data-mo-tn-0"}
	for i := range max(u.logStores, 1) {
		want = append(want, fmt.Sprintf("data-mo-log-%d", i))
	}
	for i := range u.cns {
		want = append(want, fmt.Sprintf("data-mo-cn-%d", i))
	}
	if u.sharedClaim != "" {
		want = append(want, u.sharedClaim)
	}
	want = append(want, u.otherClaims...)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		fatalf(t, "claims after the deletion: %v, want %v", names, want)
	}
	if _, err := env.client.CoreV1().Secrets(u.ns).Get(context.Background(), moClusterLog+"-root", metav1.GetOptions{}); err != nil {
		fatalf(t, "root's password Secret after the deletion: %v", err)
	}
	if deleted != nil {
		deleted()
	}
	start := time.Now()
	if out, err := kubectlStdin(u.manifest("debug"), "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	u.waitReady(6 * time.Minute)
	var after string
	eventually(t, 2*time.Minute, "the rows read back", func(context.Context) error {
		out, err := u.sql("select count(*) from e2e.t")
		after = strings.TrimSpace(out)
		return err
	})
	t.Logf("Re-created and Ready after %s; %s rows before the deletion, %s after", time.Since(start).Round(time.Second), rows, after)
	if n, _ := strconv.Atoi(rows); n == 0 || after != rows {
		errorf(t, "%s rows after the re-creation, %s before", after, rows)
	}
}

// pods are the cluster's pods (moClusterPods).
func (u *moUmbrella) pods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(u.ns).List(context.Background(), metav1.ListOptions{LabelSelector: moClusterPods})
	if err != nil {
		fatalNow(t, err)
	}
	return pods.Items
}

// podUIDs are the UIDs of the cluster's pods, by name.
func (u *moUmbrella) podUIDs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range u.pods(t) {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID)
		}
	}
	return out
}

// autoscaled hands the CN group's count to a real HorizontalPodAutoscaler
// (kube-controller-manager's): with replicasFrom CNSet, an autoscaler
// whose minReplicas is one above the group's scales the CNSet through its
// scale subresource (no metrics needed: a count below minReplicas is
// raised), and the cluster keeps it; with the autoscaler gone and
// replicasFrom Cluster, the group's own count comes back, the extra CN
// drained first.
func (u *moUmbrella) autoscaled(t *testing.T) {
	want := u.cns + 1
	if out, err := kubectl("patch", "matrixonecluster", "mo", "-n", u.ns, "--type", "json", "-p",
		`[{"op": "add", "path": "/spec/cnGroups/0/replicasFrom", "value": "CNSet"}]`); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	hpa := fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: mo-cn, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: %s, kind: CNSet, name: %s}
  minReplicas: %d
  maxReplicas: %d
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`, u.ns, mov1.GroupVersion, moClusterCN, want, want)
	start := time.Now()
	if out, err := kubectlStdin(hpa, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, 5*time.Minute, fmt.Sprintf("the autoscaler's %d CNs ready and the cluster Ready", want), func(context.Context) error {
		cn := &mov1.CNSet{}
		u.get(moClusterCN, cn)
		if got := ptr.Deref(cn.Spec.Replicas, 0); int(got) != want || int(cn.Status.ReadyReplicas) != want {
			return fmt.Errorf("CNSet replicas %d, %d ready", got, cn.Status.ReadyReplicas)
		}
		mc := &mov1.MatrixOneCluster{}
		u.getInto(mc)
		return settled(mc.Generation, &mc.Status.StatusCore)
	})
	t.Logf("The autoscaler's %d CNs ready and the cluster Ready %s after its creation", want, time.Since(start).Round(time.Second))
	time.Sleep(20 * time.Second) // passes of the cluster meanwhile: the count stays
	cn := &mov1.CNSet{}
	u.get(moClusterCN, cn)
	if got := ptr.Deref(cn.Spec.Replicas, 0); int(got) != want {
		fatalf(t, "the CNSet's replicas went from the autoscaler's %d to %d", want, got)
	}
	if out, err := kubectl("delete", "hpa", "mo-cn", "-n", u.ns); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	if out, err := kubectl("patch", "matrixonecluster", "mo", "-n", u.ns, "--type", "json", "-p",
		`[{"op": "replace", "path": "/spec/cnGroups/0/replicasFrom", "value": "Cluster"}]`); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	eventually(t, drainTimeout+2*time.Minute, fmt.Sprintf("the group's %d CNs again and the cluster Ready", u.cns), func(context.Context) error {
		u.get(moClusterCN, cn)
		if got := ptr.Deref(cn.Spec.Replicas, 0); int(got) != u.cns || int(cn.Status.ReadyReplicas) != u.cns {
			return fmt.Errorf("CNSet replicas %d, %d ready", got, cn.Status.ReadyReplicas)
		}
		mc := &mov1.MatrixOneCluster{}
		u.getInto(mc)
		return settled(mc.Generation, &mc.Status.StatusCore)
	})
}
