package manager_test

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/systems"
)

func TestNewOptionsDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "steward-system") // the chart sets it from the downward API
	got := manager.NewOptions()
	if got.Systems != "all" || !got.LeaderElect || got.LeaderElectionNamespace != "" ||
		got.MetricsBindAddress != ":8443" || !got.MetricsSecure || got.HealthProbeBindAddress != ":8081" ||
		got.GracefulShutdownTimeout != 20*time.Second || got.ShutdownDelay != 5*time.Second || got.MaxConcurrentReconciles != 4 {
		t.Errorf("NewOptions() = %+v, want systems=all, leader election on, secure metrics :8443, probes :8081, 20s shutdown after a 5s delay, 4 workers", got)
	}
	if w := got.Webhooks; !w.Enabled || !w.CertRotation || w.Namespace != "steward-system" || w.Port != 9443 {
		t.Errorf("NewOptions().Webhooks = %+v, want enabled, rotating its certificate, in $POD_NAMESPACE, port 9443", w)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("default options do not validate: %v", err)
	}
}

func TestBindFlags(t *testing.T) {
	opts := manager.NewOptions()
	fs := flag.NewFlagSet("steward", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.BindFlags(fs)

	err := fs.Parse([]string{
		"--systems=zookeeper,gpss",
		"--watch-namespaces=team-a, team-b,",
		"--leader-elect=false",
		"--leader-election-namespace=ops",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:9440",
		"--graceful-shutdown-timeout=1m",
		"--shutdown-delay=3s",
		"--max-concurrent-reconciles=16",
		"--zap-log-level=debug",
	})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := manager.Options{
		Systems:                 "zookeeper,gpss",
		LeaderElectionNamespace: "ops",
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  "127.0.0.1:9440",
		GracefulShutdownTimeout: time.Minute,
		ShutdownDelay:           3 * time.Second,
		MaxConcurrentReconciles: 16,
	}
	if opts.Systems != want.Systems || opts.LeaderElect || opts.LeaderElectionNamespace != want.LeaderElectionNamespace ||
		opts.MetricsBindAddress != want.MetricsBindAddress || opts.HealthProbeBindAddress != want.HealthProbeBindAddress ||
		opts.GracefulShutdownTimeout != want.GracefulShutdownTimeout || opts.ShutdownDelay != want.ShutdownDelay ||
		opts.MaxConcurrentReconciles != want.MaxConcurrentReconciles {
		t.Errorf("parsed options = %+v, want %+v with leader election off", opts, want)
	}
	if !slices.Equal(opts.WatchNamespaces, []string{"team-a", "team-b"}) {
		t.Errorf("--watch-namespaces parsed as %q, want [team-a team-b]", opts.WatchNamespaces)
	}
	if opts.Zap.Level == nil {
		t.Error("--zap-log-level was not bound to the zap options")
	}
	// From internal/systems, so that a new system is no edit here.
	if usage := fs.Lookup("systems").Usage; !strings.Contains(usage, strings.Join(systems.Known(), ", ")) {
		t.Errorf("--systems usage %q does not list the known systems", usage)
	}
}

func TestValidate(t *testing.T) {
	withZooKeeper := systems.NewRegistry(systems.System{Name: systems.ZooKeeper, Setup: func(ctrl.Manager) error { return nil }})
	tests := []struct {
		name     string
		modify   func(*manager.Options)
		wantErrs []string
	}{
		{name: "defaults", modify: func(*manager.Options) {}},
		{
			name:     "system not in this build",
			modify:   func(o *manager.Options) { o.Systems, o.Registry = "zookeeper", systems.NewRegistry() },
			wantErrs: []string{`--systems: system "zookeeper" is not available in this build (available: none)`},
		},
		{
			name:     "unknown system",
			modify:   func(o *manager.Options) { o.Systems = "foo" },
			wantErrs: []string{`--systems: unknown system "foo" (known: ` + strings.Join(systems.Known(), ", ") + `)`},
		},
		{
			name:   "registered system",
			modify: func(o *manager.Options) { o.Systems, o.Registry = "zookeeper", withZooKeeper },
		},
		{
			name:     "negative shutdown timeout",
			modify:   func(o *manager.Options) { o.GracefulShutdownTimeout = -time.Second },
			wantErrs: []string{"--graceful-shutdown-timeout must not be negative"},
		},
		{
			name:     "negative shutdown delay",
			modify:   func(o *manager.Options) { o.ShutdownDelay = -time.Second },
			wantErrs: []string{"--shutdown-delay must not be negative"},
		},
		{
			name:     "a watched namespace that is no namespace name",
			modify:   func(o *manager.Options) { o.WatchNamespaces = []string{"team-a", "Team_B"} },
			wantErrs: []string{`--watch-namespaces: "Team_B" is not a namespace name`},
		},
		{
			name:     "profiles with metrics off",
			modify:   func(o *manager.Options) { o.Pprof, o.MetricsBindAddress = true, "0" },
			wantErrs: []string{"--pprof serves on the metrics endpoint: it needs --metrics-bind-address"},
		},
		{
			name:     "no workers",
			modify:   func(o *manager.Options) { o.MaxConcurrentReconciles = 0 },
			wantErrs: []string{"--max-concurrent-reconciles must be at least 1, got 0"},
		},
		{
			name:     "certificate rotation needs the namespace",
			modify:   func(o *manager.Options) { o.Webhooks.Namespace = "" },
			wantErrs: []string{"--namespace (or $POD_NAMESPACE) is required when --webhook-cert-rotation is on"},
		},
		{
			name:   "cert-manager provides the certificate",
			modify: func(o *manager.Options) { o.Webhooks.Namespace, o.Webhooks.CertRotation = "", false },
		},
		{
			name:   "webhooks off",
			modify: func(o *manager.Options) { o.Webhooks.Namespace, o.Webhooks.Port, o.Webhooks.Enabled = "", 0, false },
		},
		{
			name:     "bad webhook port",
			modify:   func(o *manager.Options) { o.Webhooks.Port = 70000 },
			wantErrs: []string{"--webhook-port must be between 1 and 65535, got 70000"},
		},
		{
			name: "every problem is reported",
			modify: func(o *manager.Options) {
				o.Systems, o.GracefulShutdownTimeout = "foo", -time.Second
			},
			wantErrs: []string{`unknown system "foo"`, "--graceful-shutdown-timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := manager.NewOptions()
			opts.Webhooks.Namespace = "steward-system" // $POD_NAMESPACE in a pod
			tt.modify(&opts)
			err := opts.Validate()
			if len(tt.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// offlineOptions returns options for building a manager without an API
// server: ctrl.NewManager does not contact the server until it starts.
func offlineOptions(t *testing.T) (*rest.Config, manager.Options) {
	t.Helper()
	opts := manager.NewOptions()
	opts.LeaderElect = false
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.Webhooks.Namespace = "steward-system"
	return &rest.Config{Host: "https://127.0.0.1:1"}, opts
}

func TestNewSetsUpSelectedSystems(t *testing.T) {
	cfg, opts := offlineOptions(t)
	var got []ctrl.Manager
	opts.Registry = systems.NewRegistry(
		systems.System{Name: systems.ZooKeeper, Setup: func(mgr ctrl.Manager) error { got = append(got, mgr); return nil }},
		systems.System{Name: systems.GPSS, Setup: func(ctrl.Manager) error { t.Error("gpss was set up but not selected"); return nil }},
	)
	opts.Systems = systems.ZooKeeper

	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if len(got) != 1 || got[0] != mgr {
		t.Fatalf("zookeeper Setup called with %v, want exactly once with the new manager", got)
	}
}

func TestNewWrapsSetupErrors(t *testing.T) {
	cfg, opts := offlineOptions(t)
	errBoom := errors.New("boom")
	opts.Registry = systems.NewRegistry(systems.System{Name: systems.GPSS, Setup: func(ctrl.Manager) error { return errBoom }})

	_, err := manager.New(cfg, opts)
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), `set up system "gpss"`) {
		t.Fatalf("New() error = %v, want it to wrap the Setup error and name the system", err)
	}
}

func TestBuiltinHasZooKeeper(t *testing.T) {
	if _, err := manager.Builtin().Select(systems.All); err != nil {
		t.Fatalf("Builtin().Select(all): %v", err)
	}
	if _, err := manager.Builtin().Select(systems.ZooKeeper); err != nil {
		t.Errorf("Builtin().Select(zookeeper) = %v, want the ZooKeeper system", err)
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	cfg, opts := offlineOptions(t)
	// A system Steward knows that this registry (a build) does not run.
	opts.Registry = systems.NewRegistry(systems.System{Name: systems.ZooKeeper, Setup: func(ctrl.Manager) error { return nil }})
	opts.Systems = systems.MatrixOne
	if _, err := manager.New(cfg, opts); err == nil || !strings.Contains(err.Error(), "not available in this build") {
		t.Fatalf("New() error = %v, want the --systems error", err)
	}
}

func TestNewLogsWhenNoSystemIsRegistered(t *testing.T) {
	cfg, opts := offlineOptions(t)
	opts.Registry = systems.NewRegistry()
	var logged []string
	opts.Logger = funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})

	if _, err := manager.New(cfg, opts); err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, line := range logged {
		if strings.Contains(line, `"msg"="No systems registered"`) {
			return
		}
	}
	t.Errorf("New did not log %q; logged %q", "No systems registered", logged)
}
