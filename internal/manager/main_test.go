package manager_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the one kube-apiserver and etcd the integration tests share.
var server testenv.APIServer

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }

// apiServer returns a client configuration for the shared test API server.
func apiServer(t *testing.T) *rest.Config { return server.Config(t) }

// testLogger logs to t until the test ends.
func testLogger(t *testing.T) logr.Logger { return testenv.Logger(t, 0) }
