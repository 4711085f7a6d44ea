// Command golangci-lint is golangci-lint with the Kube API Linter
// (sigs.k8s.io/kube-api-linter) compiled in as a module plugin: the program
// "golangci-lint custom" generates from a .custom-gcl.yml, written here
// because that command clones golangci-lint's Git repository, which a
// machine that reaches only the Go module proxy cannot. Both versions are
// pinned by this directory's go.mod; make golangci-lint builds it into
// bin/golangci-lint, and .golangci.yml enables the plugin (kubeapilinter)
// on api/ only.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the kubeapilinter module plugin.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	info := commands.BuildInfo{Version: "custom", Commit: "?", Date: "", GoVersion: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/golangci/golangci-lint/v2" {
				info.Version = dep.Version + "-custom-kube-api-linter"
			}
		}
	}
	if err := commands.Execute(info); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "Failed executing command with error: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
