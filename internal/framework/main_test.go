package framework_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the one kube-apiserver and etcd the integration tests share,
// with the test-only CRDs (Widget, Gadget) from internal/testapi/crd.
var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("internal", "testapi", "crd")}}

func TestMain(m *testing.M) {
	// Managers log to their test (see testLogger); silence the global
	// logger that informers use.
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &server))
}

// apiServer returns a client configuration for the shared test API server.
func apiServer(t *testing.T) *rest.Config { return server.Config(t) }

// setup gives a test the shared API server's configuration, a client and a
// namespace of its own.
func setup(t *testing.T) (*rest.Config, client.Client, string) {
	t.Helper()
	cfg := apiServer(t)
	c := newClient(t, cfg)
	return cfg, c, testenv.Namespace(t, c, "framework-test-")
}

// testLogger logs to t until the test ends.
func testLogger(t *testing.T) logr.Logger { return testenv.Logger(t, testVerbosity) }
