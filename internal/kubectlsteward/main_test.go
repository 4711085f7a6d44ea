package kubectlsteward_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/internal/testenv"
)

var server = testenv.APIServer{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &server)) }
