package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/internal/testenv"
)

// server is the API server of the tests that install what the chart
// renders (TestNamespacedInstall), with Steward's CRDs.
var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }
