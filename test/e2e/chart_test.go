//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/test/portforward"
)

// Leader election timings: controller-runtime's defaults, which the
// manager keeps.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	leaseName     = "steward.steward.dev"
)

// TestChartLifecycle walks through what a user does with the chart, in
// order, on the release the suite installed: admission webhooks working
// with the certificate the operator issued itself; metrics readable only
// with an authorized token; two replicas, the leader killed mid-operation
// and the standby finishing it; admission answered throughout while a
// replica is evicted or deleted; an upgrade to a new image tag, admission
// answered throughout; the release narrowed to one namespace and widened
// again; uninstall
// leaving nothing but the CRDs (and the leader-election Lease, a namespaced
// record); and an install again on the kept CRDs, for the tests after it.
func TestChartLifecycle(t *testing.T) {
	skipUnlessFull(t)
	in := skipUnselected(t, systems.ZooKeeper, "the chart's lifecycle, which drives a ZooKeeper cluster,")
	installOperator(t)
	z := &zkScenario{scenario: newScenario(t, "chart", "zk", zkName, "server"), image: in.image(t, systems.ZooKeeper)}
	for _, step := range []struct {
		name string
		run  func(t *testing.T, z *zkScenario)
	}{
		{"webhooks reject and default", testWebhooks},
		{"metrics need an authorized token", testMetrics},
		{"the standby takes over from a killed leader", testFailover},
		{"admission survives a lost replica", testAdmissionSurvivesALostReplica},
		{"upgrade to a new image tag", testUpgrade},
		{"a namespace-scoped install leaves other namespaces alone", testNamespaceScoped},
		{"uninstall leaves only the CRDs", testUninstall},
	} {
		if !t.Run(step.name, func(t *testing.T) { z.t = t; step.run(t, z) }) {
			dumpOperator(t)
			return
		}
	}
}

// testWebhooks checks admission through the webhook Service, with
// server-side dry runs (the webhooks declare no side effects): an invalid
// spec the schema cannot catch is denied by the validating webhook, naming
// the field; a valid one is defaulted by the mutating webhook with a value
// only the webhook sets; an even replica count is admitted with a warning.
func testWebhooks(t *testing.T, z *zkScenario) {
	ns := z.ns
	manifest := func(spec string) string {
		return fmt.Sprintf("apiVersion: zookeeper.steward.dev/v1alpha1\nkind: ZookeeperCluster\nmetadata: {name: hooks, namespace: %s}\nspec: %s\n", ns, spec)
	}
	out, err := kubectlStdin(manifest(`{heap: 1g, resources: {limits: {memory: 512Mi}}}`), "create", "--dry-run=server", "-f", "-")
	// kubectl prints a 422's causes, not the webhook's name; the reason is
	// the webhook's own (the schema cannot compare the two fields).
	if err == nil || !strings.Contains(out, "spec.resources.limits.memory") || !strings.Contains(out, "must exceed spec.heap") {
		errorf(t, "a memory limit below the heap: want a denial by the validating webhook naming spec.resources.limits.memory, got %v:\n%s", err, out)
	}

	want := &zkv1.ZookeeperCluster{Spec: zkv1.ZookeeperClusterSpec{Heap: "256m"}}
	zkv1.Default(want)
	wantMemory := want.Spec.Resources.Requests.Memory()
	if wantMemory.IsZero() {
		fatalNow(t, "zkv1.Default sets no memory request: nothing for the webhook to show")
	}
	out, err = kubectlStdin(manifest(`{heap: 256m}`), "create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.resources.requests.memory}")
	if err != nil {
		fatalf(t, "a valid spec was not admitted: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(out); got != wantMemory.String() {
		errorf(t, "spec.resources.requests.memory = %q after admission, want %q from the defaulting webhook", got, wantMemory.String())
	}

	out, err = kubectlStdin(manifest(`{replicas: 4}`), "create", "--dry-run=server", "-f", "-")
	if err != nil || !strings.Contains(out, "Warning:") {
		errorf(t, "an even replica count: want it admitted with a warning, got %v:\n%s", err, out)
	}
	t.Logf("Admission with four replicas:\n%s", out)
}

// testMetrics reads /metrics through the metrics Service as a scraper
// would: with the token of a ServiceAccount bound to the chart's
// metrics-reader ClusterRole it gets the operator's metrics; without a
// token, or with an unbound account's, it is refused.
func testMetrics(t *testing.T, z *zkScenario) {
	ns := z.ns
	reader, stranger := serviceAccountToken(t, ns, "scraper"), serviceAccountToken(t, ns, "stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "steward-e2e-metrics-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operatorRelease + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	binding, err := env.client.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	t.Cleanup(func() {
		_ = env.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	url := "https://" + portForward(t, operatorNamespace, "svc/"+operatorRelease+"-metrics", 8443) + "/metrics"
	var body string
	eventually(t, 30*time.Second, "the bound scraper reads the metrics", func(ctx context.Context) error {
		status, b := get(ctx, url, reader)
		if status != http.StatusOK {
			return fmt.Errorf("status %d: %.200s", status, b)
		}
		body = b
		return nil
	})
	if !strings.Contains(body, "controller_runtime_reconcile_total") {
		errorf(t, "the metrics lack controller_runtime_reconcile_total:\n%.500s", body)
	}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an unbound ServiceAccount", stranger, http.StatusForbidden},
	} {
		if status, _ := get(t.Context(), url, tc.token); status != tc.want {
			errorf(t, "GET /metrics with %s = %d, want %d", tc.who, status, tc.want)
		}
	}
}

// testFailover starts a scale-out of a ZooKeeper cluster from one server
// to three on the default two replicas, and SIGKILLs the leading replica's
// process as soon as the scale flow is under way: the killed process
// cannot release the Lease, so the standby must wait out its lease. It
// must lead within the lease duration plus a retry or two, and finish the
// scale-out. Admission is measured meanwhile, not required: a process
// killed outright stops answering before the kubelet and kube-proxy take
// its address out of the webhook Service, and the API server does not
// retry a refused call (docs/install.md).
func testFailover(t *testing.T, z *zkScenario) {
	z.createWith(t, 1)

	z.patch(`{"spec":{"replicas":3}}`)
	eventually(t, time.Minute, "the scale flow starts", func(context.Context) error {
		if op := z.get().Status.Operation; op == nil || !op.Phase.Active() {
			return fmt.Errorf("operation %+v", op)
		}
		return nil
	})
	load := startAdmissionLoad(z.c, client.ObjectKey{Namespace: z.ns, Name: zkName})
	leader, pod := operatorLeader(t)
	killed := time.Now()
	killContainer(t, pod)
	t.Logf("SIGKILLed the leader %s (pod %s) during %+v", leader, pod.Name, z.get().Status.Operation)

	var next string
	eventually(t, leaseDuration+4*retryPeriod+10*time.Second, "another replica leads", func(context.Context) error {
		next, _ = leaseHolder(t)
		if next == "" || next == leader {
			return fmt.Errorf("holder %q", next)
		}
		return nil
	})
	takeover := time.Since(killed)
	t.Logf("%s leads %s after the kill (lease %s, retry %s)", next, takeover.Round(100*time.Millisecond), leaseDuration, retryPeriod)
	if limit := leaseDuration + 2*retryPeriod + 3*time.Second; takeover > limit {
		errorf(t, "the takeover took %s, want within the lease and a retry (%s)", takeover, limit)
	}
	zk := z.waitReady(3, 4*time.Minute)
	t.Logf("The new leader finished the scale-out: members %v", zk.Status.Members)
	z.progress()
	sent, refusals, first := load.finish()
	t.Logf("Admission while a replica was SIGKILLed: %d requests, %d refused %v", sent, refusals, first)
}

// testAdmissionSurvivesALostReplica keeps a client creating and patching
// through the webhooks while the operator loses one replica at a time, the
// ways a cluster takes pods away: evicted, as a node drain does (the
// PodDisruptionBudget then refuses to evict the other until the
// replacement is Ready), and the leader deleted at once
// (--grace-period=0 --force: gone from the API at once, its process given
// a short grace by the kubelet). Not one request may be refused.
func testAdmissionSurvivesALostReplica(t *testing.T, z *zkScenario) {
	load := startAdmissionLoad(z.c, client.ObjectKey{Namespace: z.ns, Name: zkName})
	_, leader := operatorLeader(t)
	pods, err := operatorPods(t.Context())
	if err != nil {
		fatalNow(t, err)
	}
	var standby corev1.Pod
	for _, p := range pods {
		if p.Name != leader.Name {
			standby = p
		}
	}
	if err := evict(standby); err != nil {
		fatalf(t, "evicting the standby %s: %v", standby.Name, err)
	}
	if err := evict(leader); !apierrors.IsTooManyRequests(err) {
		errorf(t, "evicting the leader %s right after the standby: %v, want 429 from the PodDisruptionBudget", leader.Name, err)
	}
	waitForReplicas(t, standby.Name)
	t.Logf("Evicted the standby %s; the budget kept the leader %s", standby.Name, leader.Name)

	_, leader = operatorLeader(t)
	if out, err := kubectl("delete", "pod", "-n", operatorNamespace, leader.Name, "--grace-period=0", "--force", "--wait=false"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	waitForReplicas(t, leader.Name)
	load.expectAllAdmitted(t, "an eviction and a forced deletion of operator replicas")
	z.progress()
}

// evict asks the API server to evict pod, as kubectl drain does.
func evict(pod corev1.Pod) error {
	return env.client.PolicyV1().Evictions(pod.Namespace).Evict(context.Background(),
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})
}

// waitForReplicas waits until the operator runs two Ready replicas again,
// none of them gone (the named pod) or on its way out.
func waitForReplicas(t *testing.T, gone string) {
	t.Helper()
	eventually(t, 2*time.Minute, "two Ready replicas again", func(ctx context.Context) error {
		pods, err := operatorPods(ctx)
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range pods {
			if p.Name == gone || p.DeletionTimestamp != nil {
				return fmt.Errorf("%s is still there", p.Name)
			}
			if podReady(&p) {
				ready = append(ready, p.Name)
			}
		}
		if len(pods) != 2 || len(ready) != 2 {
			return fmt.Errorf("%d pods, ready: %v", len(pods), ready)
		}
		return nil
	})
}

// testUpgrade upgrades the release to a new image tag, as a user upgrades
// Steward: every replica runs the new image, admission answers every
// request throughout the rollout, the webhook certificate survives the
// upgrade (Helm leaves the data the operator wrote alone), and the
// operator still manages the cluster.
func testUpgrade(t *testing.T, z *zkScenario) {
	certBefore := webhookCA(t)
	const tag = "e2e-upgrade"
	if out, err := ctr("images", "tag", "--force", "localhost/steward:dev", "localhost/steward:"+tag); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	load := startAdmissionLoad(z.c, client.ObjectKey{Namespace: z.ns, Name: zkName})
	if err := helmInstall("--reuse-values", "--set", "image.tag="+tag); err != nil {
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "every manager pod runs the new image", func(ctx context.Context) error {
		pods, err := operatorPods(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if img := p.Spec.Containers[0].Image; img != "localhost/steward:"+tag || !podReady(&p) || p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s: image %s, ready %v", p.Name, img, podReady(&p))
			}
		}
		if len(pods) != 2 {
			return fmt.Errorf("%d pods", len(pods))
		}
		return nil
	})
	load.expectAllAdmitted(t, "a helm upgrade")
	if after := webhookCA(t); after != certBefore {
		errorf(t, "the webhook CA changed over the upgrade")
	}
	testWebhooks(t, z)
	z.patch(`{"spec":{"replicas":1}}`)
	z.waitReady(1, 4*time.Minute)
	z.progress()
}

// testNamespaceScoped upgrades the release to watch the cluster's
// namespace only (watchNamespaces), as docs/install.md describes: the
// operator still runs the cluster there, a cluster created in another
// namespace is left alone (no finalizer, no status, no StatefulSet), and
// the operator's ServiceAccount may read Secrets in the watched namespace
// only. Widened again to every namespace, the operator takes the other
// cluster on.
func testNamespaceScoped(t *testing.T, z *zkScenario) {
	other := newNamespace(t, "unwatched")
	if err := helmInstall("--reuse-values", "--set", "watchNamespaces={"+z.ns+"}"); err != nil {
		fatalNow(t, err)
	}
	sa := "system:serviceaccount:" + operatorNamespace + ":" + operatorDeployment
	for ns, want := range map[string]string{z.ns: "yes", other: "no"} {
		if out, _ := kubectl("auth", "can-i", "list", "secrets", "-n", ns, "--as", sa); strings.TrimSpace(out) != want {
			errorf(t, "can the operator list Secrets in %s? %q, want %q", ns, strings.TrimSpace(out), want)
		}
	}
	stray := fmt.Sprintf("apiVersion: zookeeper.steward.dev/v1alpha1\nkind: ZookeeperCluster\nmetadata: {name: stray, namespace: %s}\n"+
		"spec: {replicas: 1, image: %q, storage: {reclaimPolicy: Delete}}\n", other, z.image)
	if out, err := kubectlStdin(stray, "apply", "-f", "-"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	// The operator reconciles the watched namespace after the stray
	// cluster exists: a pause and a resume, each confirmed.
	for _, paused := range []bool{true, false} {
		z.patch(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused))
		eventually(t, time.Minute, fmt.Sprintf("the watched cluster's Paused condition says %t", paused), func(ctx context.Context) error {
			zk := &zkv1.ZookeeperCluster{}
			if err := z.c.Get(ctx, client.ObjectKey{Namespace: z.ns, Name: zkName}, zk); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(zk.Status.Conditions, "Paused")
			if cond == nil || (cond.Status == metav1.ConditionTrue) != paused || cond.ObservedGeneration != zk.Generation {
				return fmt.Errorf("Paused %+v at generation %d", cond, zk.Generation)
			}
			return nil
		})
	}
	zk := &zkv1.ZookeeperCluster{}
	if err := z.c.Get(context.Background(), client.ObjectKey{Namespace: other, Name: "stray"}, zk); err != nil {
		fatalNow(t, err)
	}
	if len(zk.Finalizers) > 0 || zk.Status.ObservedGeneration != 0 || len(zk.Status.Conditions) > 0 {
		errorf(t, "the cluster in the unwatched namespace %s was touched: finalizers %v, status %+v", other, zk.Finalizers, zk.Status.StatusCore)
	}
	if out, err := kubectl("get", "statefulsets", "-n", other, "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		errorf(t, "StatefulSets in the unwatched namespace %s: %q (%v)", other, out, err)
	}
	t.Logf("Watching %s only: the cluster there reconciled, %s/stray untouched", z.ns, other)

	if err := helmInstall("--reuse-values", "--set-json", "watchNamespaces=[]"); err != nil { // every namespace (--set ...={} would be one empty name, =null is lost to --reuse-values)
		fatalNow(t, err)
	}
	eventually(t, 2*time.Minute, "the operator, watching every namespace again, takes the other cluster on", func(ctx context.Context) error {
		if err := z.c.Get(ctx, client.ObjectKey{Namespace: other, Name: "stray"}, zk); err != nil {
			return err
		}
		if len(zk.Finalizers) == 0 || zk.Status.ObservedGeneration != zk.Generation {
			return fmt.Errorf("finalizers %v, observed generation %d of %d", zk.Finalizers, zk.Status.ObservedGeneration, zk.Generation)
		}
		return nil
	})
	if out, err := kubectl("delete", "zookeepercluster", "stray", "-n", other, "--wait", "--timeout=2m"); err != nil {
		errorf(t, "%v: %s", err, out)
	}
}

// testUninstall deletes the cluster (its finalizer needs the operator),
// uninstalls the release, and lists what Steward could have left: nothing
// cluster-scoped but its CRDs, nothing namespaced but the leader-election
// Lease. Then it installs again with the defaults, on the kept CRDs.
func testUninstall(t *testing.T, z *zkScenario) {
	z.deleteCluster()
	if out, err := helm("uninstall", operatorRelease, "--namespace", operatorNamespace, "--wait", "--timeout", "3m"); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
	// helm uninstall --wait returns once the Deployment is gone; its pods
	// still have their graceful shutdown to finish.
	eventually(t, time.Minute, "nothing of the release is left", func(context.Context) error {
		var left []string
		for _, scope := range [][]string{
			{"get", "clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"},
			{"get", "all,secrets,configmaps,serviceaccounts,roles,rolebindings", "-n", operatorNamespace, "-o", "name"},
		} {
			out, err := kubectl(scope...)
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			for _, name := range strings.Fields(out) {
				// The namespace's own: its default ServiceAccount and root CA.
				if name == "serviceaccount/default" || name == "configmap/kube-root-ca.crt" {
					continue
				}
				if len(scope) > 4 || strings.Contains(name, "/"+operatorRelease) {
					left = append(left, name)
				}
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("helm uninstall left %v", left)
		}
		return nil
	})
	ctx := context.Background()
	if _, err := env.client.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaseName, metav1.GetOptions{}); err == nil {
		t.Logf("Left by design: the Lease %s/%s (the namespace's to delete)", operatorNamespace, leaseName)
	}
	// Every CRD the chart ships, ZooKeeper's among them.
	crds := chartCRDs(t)
	if !slices.Contains(crds, "zookeeperclusters.zookeeper.steward.dev") {
		errorf(t, "the chart's CRDs %v lack zookeeperclusters.zookeeper.steward.dev", crds)
	}
	for _, name := range crds {
		if crd, err := kubectl("get", "crd", name, "-o", "name"); err != nil {
			errorf(t, "the CRD %s did not survive the uninstall: %v %s", name, err, crd)
		}
	}

	operatorOnce = sync.Once{}
	installOperator(t)
	testWebhooks(t, z)
}

// chartCRDs are the names of the CRDs in the chart's crds/ directory.
func chartCRDs(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(env.root, "charts", "steward", "crds", "*.yaml"))
	if err != nil {
		fatalNow(t, err)
	}
	var names []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			fatalNow(t, err)
		}
		var crd metav1.PartialObjectMetadata
		if err := yaml.Unmarshal(data, &crd); err != nil || crd.Name == "" {
			fatalf(t, "%s: no CRD name (%v)", p, err)
		}
		names = append(names, crd.Name)
	}
	return names
}

// operatorPods lists the manager's pods.
func operatorPods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := env.client.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller-manager"})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// leaseHolder returns the leader-election Lease's holder identity
// ("<pod>_<uuid>") and the pod's name.
func leaseHolder(t *testing.T) (identity, pod string) {
	t.Helper()
	l, err := env.client.CoordinationV1().Leases(operatorNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", ""
	}
	if err != nil {
		fatalNow(t, err)
	}
	identity = ptr.Deref(l.Spec.HolderIdentity, "")
	pod, _, _ = strings.Cut(identity, "_")
	return identity, pod
}

// operatorLeader waits until one of two ready replicas leads and returns
// its identity and pod.
func operatorLeader(t *testing.T) (string, corev1.Pod) {
	t.Helper()
	var identity string
	var leader corev1.Pod
	eventually(t, time.Minute, "one of two ready replicas leads", func(ctx context.Context) error {
		pods, err := operatorPods(ctx)
		if err != nil {
			return err
		}
		var podName string
		identity, podName = leaseHolder(t)
		ready := 0
		for _, p := range pods {
			if podReady(&p) {
				ready++
			}
			if p.Name == podName {
				leader = p
			}
		}
		if ready != 2 || leader.Name != podName {
			return fmt.Errorf("%d ready replicas, holder %q", ready, identity)
		}
		return nil
	})
	return identity, leader
}

// killContainer SIGKILLs the pod's container through containerd, as the
// kernel's OOM killer or a node problem would: no graceful shutdown.
func killContainer(t *testing.T, pod corev1.Pod) {
	t.Helper()
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if out, err := ctr("tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		fatalf(t, "%v: %s", err, out)
	}
}

// webhookCA returns the CA the operator keeps in its webhook Secret.
func webhookCA(t *testing.T) string {
	t.Helper()
	s, err := env.client.CoreV1().Secrets(operatorNamespace).Get(context.Background(), operatorRelease+"-webhook-cert", metav1.GetOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	if len(s.Data["ca.crt"]) == 0 || len(s.Data["tls.crt"]) == 0 {
		fatalf(t, "the webhook Secret holds %d keys, no certificate", len(s.Data))
	}
	return string(s.Data["ca.crt"])
}

// serviceAccountToken creates a ServiceAccount in ns and returns a token
// the API server issued for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := env.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		fatalNow(t, err)
	}
	tr, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		fatalNow(t, err)
	}
	return tr.Status.Token
}

// portForward runs kubectl port-forward to target's port in namespace ns
// on a free loopback port until the test ends, and returns that address
// (127.0.0.1:<port>): the way the test process reaches a Service, through
// the API server, the cluster's network being localkube's own.
func portForward(t *testing.T, ns, target string, port int) string {
	t.Helper()
	addr, stop, err := portforward.Start(filepath.Join(env.binDir, "kubectl"), "", ns, target, port)
	if err != nil {
		fatalNow(t, err)
	}
	t.Cleanup(stop)
	return addr
}

// get GETs url with token as bearer (when set), skipping certificate
// verification (the metrics certificate is self-signed), and returns the
// status and body; status 0 means no answer.
func get(ctx context.Context, url, token string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	resp, err := insecure.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dumpOperator logs the operator's pods and recent logs after a failure.
func dumpOperator(t *testing.T) {
	for _, args := range [][]string{
		{"get", "deployment,pods,lease,secret,svc", "-n", operatorNamespace, "-o", "wide"},
		{"logs", "-n", operatorNamespace, "-l", "app.kubernetes.io/component=controller-manager", "--tail=60", "--prefix"},
	} {
		out, _ := kubectl(args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
}
