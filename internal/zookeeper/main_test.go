package zookeeper_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the one kube-apiserver and etcd the integration tests of the
// controller share, with the CRDs of config/crd/bases. It runs neither a
// kubelet nor the StatefulSet controller nor the garbage collector: the
// StatefulSet makes no pods, no ZooKeeper answers, and owner references
// take nothing away.
var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}

func TestMain(m *testing.M) {
	// Managers log to their test (testenv.Logger); silence the global
	// logger that informers use.
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &server, &hookServer))
}
