// Command kubectl-steward is the kubectl plugin "kubectl steward": install it
// on the PATH (go install ./cmd/kubectl-steward) and run
//
//	kubectl steward status -A            every Steward object, Ready and its flow
//	kubectl steward status zk/zk1        one object: conditions, flow, status, Events
//	kubectl steward pause obc/ob         stop reconciling it
//	kubectl steward resume obc/ob
//	kubectl steward rescue retry zk/zk1  retry (skip, abort) a failed flow's step
//	kubectl steward logs --tail 100      the log of the operator replica that leads
//
// It takes kubectl's connection flags (--kubeconfig, --context, -n, ...).
// See docs/kubectl-plugin.md.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/internal/kubectlsteward"
)

func main() {
	cmd := kubectlsteward.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
