package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// APIServer is one envtest control plane, started on first use. Declare one
// per test package and stop it from TestMain.
type APIServer struct {
	// CRDDirectoryPaths are installed when the server starts.
	CRDDirectoryPaths []string
	// WebhookPaths are files or directories of Mutating- and
	// ValidatingWebhookConfigurations (controller-gen's manifests.yaml)
	// installed when the server starts, rewritten to call a webhook server
	// on this machine with a certificate generated for it: run one with
	// WebhookServer. Empty: no webhooks. Webhooks that fail closed reject
	// every request they match while no webhook server runs, so give such
	// a server its own APIServer, used only by tests that run one.
	WebhookPaths []string

	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
	skip string
}

// Config returns a client configuration for the server, starting it on
// first use. It skips the test when the control-plane binaries are not
// available: run the tests through "make unit", which points
// KUBEBUILDER_ASSETS at the ones localkube builds.
func (s *APIServer) Config(t *testing.T) *rest.Config {
	t.Helper()
	s.once.Do(s.start)
	if s.skip != "" {
		t.Skip(s.skip)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return rest.CopyConfig(s.cfg)
}

// NamespacedClient returns a client of the server whose scheme has the
// kinds addToScheme registers, and creates the namespace ns: what an API
// package's tests send their objects with.
func (s *APIServer) NamespacedClient(t *testing.T, ns string, addToScheme func(*runtime.Scheme) error) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(s.Config(t), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	return c
}

func (s *APIServer) start() {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		s.skip = "KUBEBUILDER_ASSETS is not set; run \"make unit\" to run the integration tests against a real kube-apiserver"
		return
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			s.skip = fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s binary: %v", assets, bin, err)
			return
		}
	}
	s.env = &envtest.Environment{
		CRDDirectoryPaths:     s.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: len(s.CRDDirectoryPaths) > 0,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: s.WebhookPaths},
	}
	if s.cfg, s.err = s.env.Start(); s.err != nil {
		s.err = fmt.Errorf("start envtest from %s: %w", assets, s.err)
	}
}

// WebhookServer returns a webhook server for a manager (its WebhookServer
// option) that serves the webhooks installed from WebhookPaths: it listens
// where they call, with the certificate they trust. Start the server
// before the first request the webhooks match, and one at a time: they
// all share the address. It starts the API server on first use, like
// Config, and fails the test when WebhookPaths is empty.
func (s *APIServer) WebhookServer(t *testing.T) webhook.Server {
	t.Helper()
	s.Config(t)
	if len(s.WebhookPaths) == 0 {
		t.Fatal("testenv: WebhookServer of an APIServer without WebhookPaths")
	}
	o := s.env.WebhookInstallOptions
	return webhook.NewServer(webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir})
}

// Stop stops the server if it was started.
func (s *APIServer) Stop() error {
	if s.env == nil {
		return nil
	}
	return s.env.Stop()
}

// Main runs the tests of m and then stops the servers; a failure to stop
// fails the run. Call it from TestMain: os.Exit(testenv.Main(m, &server)).
func Main(m *testing.M, servers ...*APIServer) int {
	code := m.Run()
	for _, s := range servers {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Logger logs to t until the test ends, at the given verbosity. Managers
// log from goroutines that can outlive the test by a moment, and t.Log
// panics once a test has ended.
func Logger(t *testing.T, verbosity int) logr.Logger {
	t.Helper()
	var (
		mu    sync.Mutex
		ended bool
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			t.Log(prefix, args)
		}
	}, funcr.Options{Verbosity: verbosity})
}

// How Eventually polls: every Poll, for at most Settle.
const (
	Settle = 20 * time.Second
	Poll   = 25 * time.Millisecond
)

// Eventually polls cond until it holds, failing the test with the last
// reason it gave after Settle.
func Eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), Poll, Settle, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// ConflictBackoff is how long a test's write tries again after conflicts:
// some 3 s (client-go's DefaultRetry gives up after 50 ms, less than a
// controller running a few quick passes writes its status in).
var ConflictBackoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: 12, Cap: time.Second}

// Update reads obj afresh, applies change and updates it, again on a
// conflict: a controller writing the object's status between the test's
// read and its write is not the test's failure.
func Update[T client.Object](t *testing.T, c client.Client, obj T, change func(T)) {
	t.Helper()
	if err := retry.RetryOnConflict(ConflictBackoff, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(t.Context(), obj)
	}); err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// Namespace creates a namespace of the test's own, named prefix and a
// random suffix, and returns its name.
func Namespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// NamespacedManager returns a manager for a controller's integration test:
// its cache limited to namespace ns, no metrics or health endpoints, a test
// logger at verbosity, and controller names that may repeat (every test
// runs its own manager with the same controller). Register the controller,
// then StartManager.
func NamespacedManager(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, ns string, verbosity int) manager.Manager {
	t.Helper()
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Logger:                 Logger(t, verbosity),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	return mgr
}

// StartManager starts mgr until the test ends and returns stop, which
// cancels it and waits for it to return, failing the test if it returned
// an error. The test's cleanup calls stop; a test may call it earlier, as
// often as it likes.
func StartManager(t *testing.T, mgr manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// WebhookClient starts a manager whose webhook server serves the webhooks
// setup registers (a system's Webhooks function), waits until it serves,
// and returns a client of s that writes through them, as kubectl would.
// s must have WebhookPaths; the manager runs until the test ends.
func (s *APIServer) WebhookClient(t *testing.T, scheme *runtime.Scheme, setup func(manager.Manager) error) client.Client {
	t.Helper()
	cfg := s.Config(t)
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Logger:                 Logger(t, 0),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          s.WebhookServer(t),
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("set up the webhooks: %v", err)
	}
	StartManager(t, mgr)
	started := mgr.GetWebhookServer().StartedChecker()
	Eventually(t, "the webhook server to serve", func() (bool, string) {
		if err := started(nil); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}
