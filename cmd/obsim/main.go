// Command obsim is Steward's OceanBase observer simulator, run in place of
// an observer (which cannot run on the machines Steward is tested on) by
// Steward's tests and samples. It is NOT OceanBase; internal/oceanbase/obsim
// says what it models and docs/oceanbase.md what it leaves out.
//
//	obsim --appname NAME --cluster_id ID --zone ZONE (-I IP | --advertise-host HOST)
//	      [-p 2881] [-P 2882] [-d DATA_DIR] [-o name=value,...]
//
// The flags are the observer's start arguments that Steward uses. The
// server's address is IP:RPC_PORT; with --advertise-host the simulator
// resolves HOST (a Service's DNS name) to find IP, waiting until it
// resolves. Knobs are environment variables (OBSIM_*, see obsim.Knobs).
//
// +steward:role=testing
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stewardhq/steward/internal/oceanbase/obsim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "obsim:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("obsim", flag.ContinueOnError)
	appname := fs.String("appname", "", "the cluster's name (--appname)")
	clusterID := fs.Int64("cluster_id", 0, "the cluster's id (--cluster_id)")
	zone := fs.String("zone", "", "the server's zone (--zone)")
	ip := fs.String("I", "", "the server's IP address")
	host := fs.String("advertise-host", "", "a DNS name that resolves to the server's IP address")
	sqlPort := fs.Int("p", obsim.SQLPort, "the SQL port")
	rpcPort := fs.Int("P", obsim.RPCPort, "the RPC port")
	dataDir := fs.String("d", "", "the data directory, which keeps the server's state across restarts")
	options := fs.String("o", "", "start options, name=value[,name=value...]")
	fs.Bool("nodaemon", true, "run in the foreground (always)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	knobs, err := obsim.KnobsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *ip == "" && *host != "" {
		if *ip, err = resolve(ctx, log, *host); err != nil {
			return err
		}
	}
	if *ip == "" {
		return fmt.Errorf("-I or --advertise-host is required")
	}
	opts := map[string]string{}
	for kv := range strings.SplitSeq(*options, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			opts[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), "'\"")
		}
	}
	node, err := obsim.New(obsim.Config{
		Addr:        net.JoinHostPort(*ip, strconv.Itoa(*rpcPort)),
		SQLListen:   fmt.Sprintf("0.0.0.0:%d", *sqlPort),
		RPCListen:   fmt.Sprintf("0.0.0.0:%d", *rpcPort),
		SQLPort:     *sqlPort,
		ClusterName: *appname, ClusterID: *clusterID, Zone: *zone,
		Options: opts, DataDir: *dataDir, Knobs: knobs, Log: log,
	})
	if err != nil {
		return err
	}
	if err := node.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("Stopping")
	node.Stop()
	return nil
}

// resolve waits until host resolves to an IPv4 address.
func resolve(ctx context.Context, log *slog.Logger, host string) (string, error) {
	for {
		addrs, err := net.DefaultResolver.LookupIP(ctx, "ip4", host)
		if err == nil && len(addrs) > 0 {
			return addrs[0].String(), nil
		}
		log.Info("Waiting for the server's address to resolve", "host", host, "err", err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
