package gpss_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the kube-apiserver and etcd the controller's integration tests
// share, with the CRDs of config/crd/bases. Nothing else runs there: the
// StatefulSets make no pods, so the tests set the pods' and StatefulSets'
// status themselves where a step waits for it.
var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &server, &hookServer))
}
