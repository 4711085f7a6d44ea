package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/stewardhq/steward/internal/manager"
)

func main() {
	opts := manager.NewOptions()
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	// Bad flags are a usage error, reported like the flag package does.
	if flag.NArg() > 0 {
		usageError(fmt.Errorf("unexpected arguments: %q", flag.Args()))
	}
	if err := opts.Validate(); err != nil {
		usageError(err)
	}

	// One logger for controller-runtime and for client-go (leader election).
	logger := zap.New(zap.UseFlagOptions(&opts.Zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load the Kubernetes client configuration")
		os.Exit(1)
	}
	if err := manager.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		log.Error(err, "Manager exited with an error")
		os.Exit(1)
	}
}

func usageError(err error) {
	fmt.Fprintf(os.Stderr, "steward: %v\nRun 'steward --help' for usage.\n", err)
	os.Exit(2)
}
