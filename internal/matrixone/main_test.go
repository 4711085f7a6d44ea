package matrixone_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the kube-apiserver and etcd the controllers' integration tests
// share, with the CRDs of config/crd/bases. Nothing else runs there: the
// StatefulSets make no pods, so the tests create the pods and set the
// StatefulSets' status themselves, and answer for the log pods' probes
// with views they write (fakeProbe).
var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &server, &hookServer))
}
