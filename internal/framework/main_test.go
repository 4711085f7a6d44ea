package framework_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The integration tests share one kube-apiserver and etcd, started by envtest
// from the binaries in $KUBEBUILDER_ASSETS on first use and stopped by
// TestMain. The test-only CRDs (Widget, Gadget) are installed from
// internal/testapi/crd.
var (
	envOnce sync.Once
	env     *envtest.Environment
	envCfg  *rest.Config
	envErr  error
	envSkip string
)

func TestMain(m *testing.M) {
	// Managers log to their test (see testLogger); silence the global
	// logger that informers use.
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// apiServer returns a client configuration for the shared test API server,
// starting it on first use. It skips the test when the control-plane
// binaries are not available: run the tests through "make unit", which
// points KUBEBUILDER_ASSETS at them.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() {
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		if assets == "" {
			envSkip = "KUBEBUILDER_ASSETS is not set; run \"make unit\" to run the integration tests against a real kube-apiserver"
			return
		}
		for _, bin := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
				envSkip = fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s binary: %v", assets, bin, err)
				return
			}
		}
		env = &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("internal", "testapi", "crd")},
			ErrorIfCRDPathMissing: true,
		}
		envCfg, envErr = env.Start()
		if envErr != nil {
			envErr = fmt.Errorf("start envtest from %s: %w", assets, envErr)
		}
	})
	if envSkip != "" {
		t.Skip(envSkip)
	}
	if envErr != nil {
		t.Fatal(envErr)
	}
	return rest.CopyConfig(envCfg)
}
