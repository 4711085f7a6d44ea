package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/stewardhq/steward/tools/mo-agent/identity"
	"github.com/stewardhq/steward/tools/mo-agent/render"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "probe":
		err = serveProbe(os.Args[2:])
	case "backup":
		err = runBackup(os.Args[2:])
	case "store-id":
		if len(os.Args) != 4 {
			usage()
		}
		fmt.Println(wire.StoreID(os.Args[2], os.Args[3]))
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mo-agent %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: mo-agent run [--dir DIR] [--volume DIR [--stores DIR] [--hakeeper ADDR[,ADDR...]]] TEMPLATE [-- MO-SERVICE-ARGS...] | mo-agent probe --listen ADDR --hakeeper ADDR[,ADDR...] | mo-agent backup --addr HOST:PORT --endpoint URL --region R --bucket B --path P [--path-style] | mo-agent store-id NAMESPACE POD")
	os.Exit(2)
}

// run renders TEMPLATE for this pod into a file beside the operator's
// (in --dir) and replaces the process with mo-service, so the container's
// main process is MatrixOne itself and receives the kubelet's signals.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	moService := fs.String("mo-service", "/mo-service", "the mo-service binary")
	dir := fs.String("dir", os.TempDir(), "where the rendered configuration is written")
	volume := fs.String("volume", "", "a log store's volume: its UUID is recorded there (package identity)")
	stores := fs.String("stores", "", "with --volume: where the operator's stores ConfigMap is mounted")
	hakeeper := fs.String("hakeeper", "", "with --volume: HAKeeper client addresses, comma separated, asked before a new volume starts after the bootstrap")
	_ = fs.Parse(args)
	if fs.NArg() < 1 {
		usage()
	}
	template, extra := fs.Arg(0), fs.Args()[1:]
	if len(extra) > 0 && extra[0] == "--" {
		extra = extra[1:]
	}
	data, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	env, err := render.Env(os.LookupEnv)
	if err != nil {
		return err
	}
	if *volume != "" {
		known := func(ctx context.Context, uuid string) (bool, error) {
			return knownLogStore(ctx, strings.Split(*hakeeper, ","), uuid)
		}
		r := identity.Resolver{Namespace: env[render.PodNamespace], Pod: env[render.PodName], Volume: *volume, Stores: *stores,
			Known: known, PodUID: os.Getenv(wire.PodUIDEnv)}
		if env[render.StoreUUID], err = r.Resolve(context.Background()); err != nil {
			return fmt.Errorf("the store's identity: %w", err)
		}
	}
	config, err := render.Render(string(data), env)
	if err != nil {
		return fmt.Errorf("%s: %w", template, err)
	}
	out := filepath.Join(*dir, "mo-service.toml")
	if err := os.WriteFile(out, []byte(config), 0o600); err != nil {
		return err
	}
	slog.Info("Starting mo-service", "pod", env[render.PodName], "store", env[render.StoreUUID], "config", out)
	argv := append([]string{*moService, "-cfg", out}, extra...)
	return syscall.Exec(*moService, argv, os.Environ())
}

func serveProbe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	listen := fs.String("listen", ":7070", "address to serve on")
	hakeeper := fs.String("hakeeper", "", "HAKeeper client addresses (the log stores' service addresses), comma separated")
	timeout := fs.Duration("timeout", 8*time.Second, "deadline of one answer; under the operator's call timeout (10 s), over what a busy machine takes (4 s)")
	_ = fs.Parse(args)
	if *hakeeper == "" {
		return errors.New("--hakeeper is required")
	}
	mux := http.NewServeMux()
	p := &probe{addresses: strings.Split(*hakeeper, ","), timeout: *timeout}
	mux.Handle("/v1/cluster", p)
	mux.Handle(wire.LockRestartPath, &lockRestart{probe: p, timeout: *timeout})
	mux.Handle(wire.CNLabelsPath, &cnLabels{probe: p, timeout: *timeout})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	slog.Info("Serving HAKeeper's view", "listen", *listen, "hakeeper", *hakeeper)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return srv.ListenAndServe()
}
