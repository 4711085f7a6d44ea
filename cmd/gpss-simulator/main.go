// Command gpss-simulator is Steward's GPSS simulator, run in place of GPSS
// (which is proprietary and cannot run here) by Steward's tests and demo.
// It is not GPSS; internal/gpss/simulator says what it models.
//
//	gpss-simulator [--name NAME] [CONFIG]   serve (CONFIG: gpss.json, default /etc/gpss/gpss.json)
//	gpss-simulator --version                print the simulated version ("gpss-simulator 1.1")
//
// Like gpss it takes the configuration file as its argument. The instance
// name defaults to the host name (the pod's name). Knobs are environment
// variables (GPSS_SIM_*, see simulator.Knobs); each image sets
// GPSS_SIM_VERSION to its tag's version (images/gpss-simulator).
//
// +steward:role=testing
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/stewardhq/steward/internal/gpss/simulator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gpss-simulator:", err)
		os.Exit(1)
	}
}

func run() error {
	version := flag.Bool("version", false, "print the simulated GPSS version and exit")
	name := flag.String("name", "", "this instance's name (default: the host name)")
	flag.Parse()
	knobs, err := simulator.KnobsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if *version {
		fmt.Println(simulator.VersionLine(knobs.Version))
		return nil
	}
	path := "/etc/gpss/gpss.json"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if *name == "" {
		if *name, err = os.Hostname(); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	server, err := simulator.New(raw, *name, knobs, log)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return server.Run(ctx, nil, nil)
}
