package manager_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/internal/testenv"
)

const (
	// settle bounds how long the tests wait for the manager to reach a state.
	settle = 30 * time.Second
	// shutdownTimeout is the graceful shutdown timeout of the managers under test.
	shutdownTimeout = 5 * time.Second
)

// TestRunAgainstAPIServer runs the manager as the steward binary does, against
// a real kube-apiserver: it serves its probes and metrics, acquires the leader
// election Lease, and on cancellation drains (not ready, still serving, for
// the shutdown delay), then stops within the graceful shutdown timeout and
// releases the Lease.
func TestRunAgainstAPIServer(t *testing.T) {
	cfg := apiServer(t)
	c := newClient(t, cfg)
	ns := testenv.Namespace(t, c, "steward-test-")

	opts := integrationOptions(t, ns)
	opts.ShutdownDelay = 2 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, cfg, opts) }()

	probes := "http://" + opts.HealthProbeBindAddress
	for _, url := range []string{probes + "/healthz", probes + "/readyz"} {
		waitFor(t, "GET "+url+" to answer 200", func(ctx context.Context) (bool, error) {
			return httpStatus(ctx, url, "") == http.StatusOK, nil
		})
	}

	lease := waitForLeader(t, c, ns, func(holder string) bool { return holder != "" })
	t.Logf("Lease %s/%s held by %q", ns, lease.Name, *lease.Spec.HolderIdentity)

	cancel()
	start := time.Now()
	waitFor(t, "/readyz to fail once draining", func(ctx context.Context) (bool, error) {
		return httpStatus(ctx, probes+"/readyz", "") == http.StatusInternalServerError, nil
	})
	if status := httpStatus(t.Context(), probes+"/healthz", ""); status != http.StatusOK {
		t.Errorf("draining, /healthz answers %d, want 200: the manager must keep serving", status)
	}
	if holder := *waitForLeader(t, c, ns, func(string) bool { return true }).Spec.HolderIdentity; holder == "" {
		t.Error("draining, the manager already released the Lease")
	}
	limit := opts.ShutdownDelay + shutdownTimeout + 5*time.Second
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancellation, want nil", err)
		}
		stopped := time.Since(start)
		t.Logf("Manager stopped %s after cancellation (shutdown delay %s)", stopped.Round(time.Millisecond), opts.ShutdownDelay)
		if stopped < opts.ShutdownDelay {
			t.Errorf("the manager stopped %s after cancellation, before its shutdown delay %s", stopped, opts.ShutdownDelay)
		}
	case <-time.After(limit):
		t.Fatalf("Run did not return within %s of cancellation (shutdown delay %s, graceful shutdown timeout %s)",
			limit, opts.ShutdownDelay, shutdownTimeout)
	}

	// The manager steps down on a clean stop, so a successor need not wait
	// for the Lease to expire.
	waitForLeader(t, c, ns, func(holder string) bool { return holder == "" })
	if status := httpStatus(t.Context(), probes+"/healthz", ""); status != 0 {
		t.Errorf("the probe server still answers %d after shutdown", status)
	}
}

// TestMetricsNeedAnAuthorizedToken checks the secure metrics endpoint
// against a real API server's TokenReview and SubjectAccessReview: no token
// is 401, a ServiceAccount not allowed GET /metrics is 403, and one bound
// to a role that allows it reads the metrics.
func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	cfg := apiServer(t)
	c := newClient(t, cfg)
	ns := testenv.Namespace(t, c, "steward-test-")
	opts := integrationOptions(t, ns)
	opts.LeaderElect = false
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = manager.Run(ctx, cfg, opts) }()

	reader := serviceAccountToken(t, c, ns, "scraper")
	stranger := serviceAccountToken(t, c, ns, "stranger")
	allowGet(t, c, ns, "scraper", "/metrics")

	url := "https://" + opts.MetricsBindAddress + "/metrics"
	waitFor(t, "the authorized scraper to read "+url, func(ctx context.Context) (bool, error) {
		return httpStatus(ctx, url, reader) == http.StatusOK, nil
	})
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the role", stranger, http.StatusForbidden},
		// The TokenReview of a malformed token fails rather than answering
		// "not authenticated"; controller-runtime's filter answers 500.
		{"a token the API server did not issue", "not-a-token", http.StatusInternalServerError},
	} {
		if got := httpStatus(t.Context(), url, tc.token); got != tc.want {
			t.Errorf("GET /metrics with %s = %d, want %d", tc.who, got, tc.want)
		}
	}
	if got := httpStatus(t.Context(), "https://"+opts.MetricsBindAddress+"/debug/pprof/heap", reader); got != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/heap without --pprof = %d, want 404", got)
	}
}

// TestPprofNeedsItsOwnRole runs the manager with --pprof against a real
// API server: its profiles are served on the metrics endpoint behind the
// same TokenReview and SubjectAccessReview, so a scraper allowed /metrics
// only is 403, and a ServiceAccount allowed GET on the profiles reads
// the heap profile and the index. --pprof without --metrics-secure is
// refused.
func TestPprofNeedsItsOwnRole(t *testing.T) {
	cfg := apiServer(t)
	c := newClient(t, cfg)
	ns := testenv.Namespace(t, c, "steward-test-")
	opts := integrationOptions(t, ns)
	opts.LeaderElect, opts.Pprof = false, true
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = manager.Run(ctx, cfg, opts) }()

	scraper := serviceAccountToken(t, c, ns, "scraper")
	allowGet(t, c, ns, "scraper", "/metrics")
	profiler := serviceAccountToken(t, c, ns, "profiler")
	allowGet(t, c, ns, "profiler", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine") // as the chart's pprof-reader names them

	base := "https://" + opts.MetricsBindAddress
	waitFor(t, "the profiler to read the heap profile", func(ctx context.Context) (bool, error) {
		return httpStatus(ctx, base+"/debug/pprof/heap?debug=1", profiler) == http.StatusOK, nil
	})
	for _, tc := range []struct {
		who, path, token string
		want             int
	}{
		{"the profiler", "/debug/pprof/", profiler, http.StatusOK},
		{"the profiler", "/debug/pprof/goroutine?debug=1", profiler, http.StatusOK},
		{"a scraper allowed /metrics only", "/debug/pprof/heap", scraper, http.StatusForbidden},
		{"a scraper allowed /metrics only", "/metrics", scraper, http.StatusOK},
		{"no token", "/debug/pprof/heap", "", http.StatusUnauthorized},
	} {
		if got := httpStatus(t.Context(), base+tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s with %s = %d, want %d", tc.path, tc.who, got, tc.want)
		}
	}

	opts.MetricsSecure = false
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--pprof needs --metrics-secure") {
		t.Errorf("--pprof without --metrics-secure: %v", err)
	}
}

// allowGet binds the ServiceAccount ns/name to a new ClusterRole allowing
// GET on the non-resource URLs, until the test ends.
func allowGet(t *testing.T, c client.Client, ns, name string, urls ...string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: urls, Verbs: []string{"get"}}},
	}
	if err := c.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), binding)
		_ = c.Delete(context.Background(), role)
	})
}

// serviceAccountToken creates the ServiceAccount name in ns and returns a
// token the API server issued for it.
func serviceAccountToken(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := c.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := c.SubResource("token").Create(t.Context(), sa, req); err != nil {
		t.Fatalf("request a token for %s/%s: %v", ns, name, err)
	}
	return req.Status.Token
}

// TestLeaderHandover checks that only one of two replicas leads, and that the
// standby takes over as soon as the leader stops.
func TestLeaderHandover(t *testing.T) {
	cfg := apiServer(t)
	c := newClient(t, cfg)
	ns := testenv.Namespace(t, c, "steward-test-")

	leaderCtx, stopLeader := context.WithCancel(t.Context())
	defer stopLeader()
	leaderDone := make(chan error, 1)
	go func() { leaderDone <- manager.Run(leaderCtx, cfg, integrationOptions(t, ns)) }()
	first := *waitForLeader(t, c, ns, func(holder string) bool { return holder != "" }).Spec.HolderIdentity

	standby, err := manager.New(cfg, integrationOptions(t, ns))
	if err != nil {
		t.Fatalf("New standby: %v", err)
	}
	standbyCtx, stopStandby := context.WithCancel(t.Context())
	standbyDone := make(chan error, 1)
	go func() { standbyDone <- standby.Start(standbyCtx) }()
	defer func() {
		stopStandby()
		if err := <-standbyDone; err != nil {
			t.Errorf("standby stopped with %v", err)
		}
	}()

	// Give the standby several retry periods to (wrongly) take the Lease.
	select {
	case <-standby.Elected():
		t.Fatal("the standby was elected while the leader held the Lease")
	case <-time.After(5 * time.Second):
	}

	stopLeader()
	if err := <-leaderDone; err != nil {
		t.Fatalf("leader stopped with %v", err)
	}
	select {
	case <-standby.Elected():
	case <-time.After(settle):
		t.Fatalf("the standby was not elected within %s of the leader stopping", settle)
	}
	second := *waitForLeader(t, c, ns, func(holder string) bool { return holder != "" }).Spec.HolderIdentity
	if second == first {
		t.Errorf("Lease holder is still %q after the leader stopped", first)
	}
}

func integrationOptions(t *testing.T, leaseNamespace string) manager.Options {
	t.Helper()
	opts := manager.NewOptions()
	opts.LeaderElect = true
	opts.LeaderElectionNamespace = leaseNamespace
	opts.HealthProbeBindAddress = freeAddress(t)
	opts.MetricsBindAddress = freeAddress(t)
	opts.GracefulShutdownTimeout = shutdownTimeout
	// Nothing routes to these managers: stopping need not wait.
	opts.ShutdownDelay = 0
	opts.Logger = testLogger(t)
	// No system registers webhooks here; the webhook server is covered
	// end to end, where a kubelet mounts its certificate.
	opts.Webhooks.Enabled = false
	// Leader election is under test, not the systems: several managers run
	// in this process, and a controller's name may be registered once.
	opts.Registry = systems.NewRegistry()
	return opts
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}

// waitForLeader waits until the leader election Lease exists and its holder
// satisfies ok, and returns it.
func waitForLeader(t *testing.T, c client.Client, ns string, ok func(holder string) bool) *coordinationv1.Lease {
	t.Helper()
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: ns, Name: manager.LeaderElectionID}
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, lease); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		holder = ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return ok(holder), nil
	})
	if err != nil {
		t.Fatalf("waiting for the holder of Lease %s to change (last seen %q): %v", key, holder, err)
	}
	return lease
}

func waitFor(t *testing.T, what string, condition wait.ConditionWithContextFunc) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, condition)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// httpStatus returns the status code of GET url, or 0 if the request fails.
// httpStatus GETs url, with token as bearer when not empty, and returns
// the status code, or 0 when there was no answer. HTTPS certificates are
// not verified: the metrics server's is self-signed.
func httpStatus(ctx context.Context, url, token string) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	resp, err := insecure.Do(req)
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode
}

// freeAddress returns a loopback address with a port that was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("release port %s: %v", addr, err)
	}
	return addr
}

// startAlone starts a manager without leader election, watching a
// namespace of its own.
func startAlone(t *testing.T) (ctrlmanager.Manager, client.Client, string) {
	t.Helper()
	cfg := apiServer(t)
	c := newClient(t, cfg)
	ns := testenv.Namespace(t, c, "steward-test-")
	opts := integrationOptions(t, ns)
	opts.LeaderElect = false
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	return mgr, c, ns
}

// TestCacheHoldsOnlyStewardSecrets checks that the manager's cache holds
// the Secrets Steward manages and no other, which stay readable from the
// API server.
func TestCacheHoldsOnlyStewardSecrets(t *testing.T) {
	mgr, c, ns := startAlone(t)

	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ours", Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "steward"}}}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: ns}}
	for _, s := range []*corev1.Secret{ours, theirs} {
		if err := c.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	cached := mgr.GetClient()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
		return cached.Get(ctx, client.ObjectKeyFromObject(ours), &corev1.Secret{}) == nil, nil
	})
	if err != nil {
		t.Fatalf("Steward's Secret never reached the cache: %v", err)
	}
	if err := cached.Get(t.Context(), client.ObjectKeyFromObject(theirs), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("cached Get of an unmanaged Secret = %v, want NotFound", err)
	}
	if err := mgr.GetAPIReader().Get(t.Context(), client.ObjectKeyFromObject(theirs), &corev1.Secret{}); err != nil {
		t.Errorf("API reader Get of an unmanaged Secret = %v, want it found", err)
	}
}

// TestCacheHoldsSlimObjects checks, through the manager's client, that the
// cache holds pods and StatefulSets' pod templates without what Steward
// never reads (a probe), and a StatefulSet's claim templates whole.
func TestCacheHoldsSlimObjects(t *testing.T) {
	mgr, c, ns := startAlone(t)

	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: spec}
	labels := map[string]string{"app": "s"}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: labels},
		Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
	}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Name: "p", Port: 80}}}}
	ours := map[string]string{standard.LabelManagedBy: standard.ManagedBy}
	ownClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-s-0", Namespace: ns, Labels: ours}, Spec: claim.Spec}
	configLabels := map[string]string{standard.LabelManagedBy: standard.ManagedBy, framework.ConfigLabel: "s"}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s-config-1", Namespace: ns, Labels: configLabels},
		Data: map[string]string{"app.cfg": "x=1"}}
	members := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s-members", Namespace: ns, Labels: ours},
		Data: map[string]string{"members": "a,b,c"}}
	for _, obj := range []client.Object{pod, sts, svc, ownClaim, config, members} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	cachedPod, cachedSet := &corev1.Pod{}, &appsv1.StatefulSet{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(pod), cachedPod) == nil &&
			mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(sts), cachedSet) == nil, nil
	})
	if err != nil {
		t.Fatalf("the pod and the StatefulSet never reached the cache: %v", err)
	}
	if got := cachedPod.Spec.Containers; len(got) != 1 || got[0].Image != "example.com/c:1" || got[0].ReadinessProbe != nil {
		t.Errorf("cached pod's containers = %+v, want its image without its probe", got)
	}
	if got := cachedSet.Spec.Template.Spec.Containers; len(got) != 1 || got[0].Image != "example.com/c:1" || got[0].ReadinessProbe != nil {
		t.Errorf("cached StatefulSet's containers = %+v, want its image without its probe", got)
	}
	cachedSvc, cachedClaim, cachedConfig, cachedMembers := &corev1.Service{}, &corev1.PersistentVolumeClaim{}, &corev1.ConfigMap{}, &corev1.ConfigMap{}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
		for _, p := range []struct{ created, cached client.Object }{
			{svc, cachedSvc}, {ownClaim, cachedClaim}, {config, cachedConfig}, {members, cachedMembers},
		} {
			if mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(p.created), p.cached) != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the Service, the claim and the ConfigMaps never reached the cache: %v", err)
	}
	if cachedSvc.Spec.ClusterIP == "" || len(cachedSvc.Spec.Ports) != 1 || cachedSvc.Spec.Selector != nil || cachedSvc.Spec.IPFamilies != nil {
		t.Errorf("cached Service's spec = %+v, want its cluster IP and ports only", cachedSvc.Spec)
	}
	if cachedClaim.UID == "" || cachedClaim.Labels[standard.LabelManagedBy] != standard.ManagedBy || len(cachedClaim.Spec.AccessModes) != 0 {
		t.Errorf("cached claim = %+v, want its metadata only", cachedClaim)
	}
	if cachedConfig.Data != nil || cachedMembers.Data["members"] != "a,b,c" {
		t.Errorf("cached ConfigMaps' data: config %v, members %v; want the config ConfigMap's dropped, the members' kept",
			cachedConfig.Data, cachedMembers.Data)
	}
	if got := cachedSet.Spec.VolumeClaimTemplates; len(got) != 1 || !got[0].Spec.Resources.Requests.Storage().Equal(resource.MustParse("1Gi")) ||
		got[0].Spec.VolumeMode == nil {
		t.Errorf("cached StatefulSet's claim templates = %+v, want them whole (the API server's defaults included)", got)
	}
}

// TestListsReadTheInstanceIndex checks that the manager's cache indexes
// children by instance and that its client's Lists by an instance's labels
// read through the index and still match every label.
func TestListsReadTheInstanceIndex(t *testing.T) {
	mgr, c, ns := startAlone(t)

	configMap := func(name, instance, component string) *corev1.ConfigMap {
		labels := map[string]string{"app.kubernetes.io/component": component}
		if instance != "" {
			labels["app.kubernetes.io/instance"] = instance
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	}
	for _, cm := range []*corev1.ConfigMap{
		configMap("a-server", "a", "server"), configMap("a-other", "a", "other"),
		configMap("b-server", "b", "server"), configMap("none-server", "", "server"),
	} {
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	names := func(list *corev1.ConfigMapList) []string {
		var out []string
		for _, cm := range list.Items {
			out = append(out, cm.Name)
		}
		slices.Sort(out)
		return out
	}
	var indexed, all corev1.ConfigMapList
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, settle, true, func(ctx context.Context) (bool, error) {
		// Every ConfigMap in the cache first: the Lists below read it.
		if err := mgr.GetCache().List(ctx, &all, client.InNamespace(ns)); err != nil || len(all.Items) < 4 {
			return false, err
		}
		err := mgr.GetCache().List(ctx, &indexed, client.InNamespace(ns), client.MatchingFields{framework.InstanceIndex: "a"})
		return err == nil && len(indexed.Items) == 2, err
	})
	if err != nil {
		t.Fatalf("the cache's instance index of ConfigMaps: %v (read %v)", err, names(&indexed))
	}
	var list corev1.ConfigMapList
	if err := mgr.GetClient().List(t.Context(), &list, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/instance": "a", "app.kubernetes.io/component": "server"}); err != nil {
		t.Fatal(err)
	}
	if got := names(&list); !slices.Equal(got, []string{"a-server"}) {
		t.Errorf("List of instance a's servers = %v, want [a-server]", got)
	}
	if err := mgr.GetClient().List(t.Context(), &list, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/component": "server"}); err != nil {
		t.Fatal(err)
	}
	if got := names(&list); !slices.Equal(got, []string{"a-server", "b-server", "none-server"}) {
		t.Errorf("List of every server = %v, want all three", got)
	}
}
