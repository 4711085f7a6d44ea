package main

import (
	"time"

	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stewardhq/steward/tools/localkube/internal/build"
	"github.com/stewardhq/steward/tools/localkube/internal/cluster"
	"github.com/stewardhq/steward/tools/localkube/internal/forward"
	"github.com/stewardhq/steward/tools/localkube/internal/netns"
	"github.com/stewardhq/steward/tools/localkube/internal/provisioner"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localkube: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return newRoot().ExecuteContext(ctx)
}

func newRoot() *cobra.Command {
	cfg := cluster.DefaultConfig(defaultBinDir())
	root := &cobra.Command{
		Use:               "localkube",
		Short:             "A real single-machine Kubernetes cluster, isolated in its own network namespace",
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	flags := root.PersistentFlags()
	flags.StringVar(&cfg.StateDir, "state-dir", cfg.StateDir, "where the cluster keeps certificates, configuration, data and logs")
	flags.StringVar(&cfg.RunDir, "run-dir", cfg.RunDir, "where the cluster keeps sockets and runtime state")
	flags.StringVar(&cfg.BinDir, "bin-dir", cfg.BinDir, "directory of the built binaries (default: $LOCALKUBE_BIN_DIR, else the directory of this executable)")
	flags.StringVar(&cfg.NetNS, "netns", cfg.NetNS, "name of the cluster's network namespace")

	root.AddCommand(
		buildCmd(&cfg), upCmd(&cfg), downCmd(&cfg), statusCmd(&cfg), loadImageCmd(&cfg), logsCmd(&cfg), restartCmd(&cfg),
		envCmd(&cfg), leftoversCmd(&cfg), egressDropsCmd(&cfg), forwardCmd(), provisionerCmd(),
	)
	return root
}

// defaultBinDir is $LOCALKUBE_BIN_DIR, else the directory localkube itself
// was installed in (build puts it next to the binaries it makes).
func defaultBinDir() string {
	if dir := os.Getenv("LOCALKUBE_BIN_DIR"); dir != "" {
		return dir
	}
	exe, err := os.Executable()
	if err != nil {
		return "."
	}
	return filepath.Dir(exe)
}

func buildCmd(cfg *cluster.Config) *cobra.Command {
	var source string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build and cache every binary and image the cluster needs; install missing Debian packages",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if source == "" {
				var err error
				if source, err = findSource(); err != nil {
					return err
				}
			}
			bin, err := filepath.Abs(cfg.BinDir)
			if err != nil {
				return err
			}
			return build.Builder{Source: source, BinDir: bin, Out: cmd.OutOrStdout()}.All()
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the localkube module's directory (default: found from the working directory)")
	return cmd
}

// findSource looks upwards from the working directory for the localkube
// module, either as the directory itself or as tools/localkube below it.
func findSource() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		for _, candidate := range []string{dir, filepath.Join(dir, "tools", "localkube")} {
			data, err := os.ReadFile(filepath.Join(candidate, "go.mod"))
			if err == nil && strings.Contains(string(data), "module github.com/stewardhq/steward/tools/localkube") {
				return candidate, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the localkube module from the working directory: pass --source")
		}
		dir = parent
	}
}

func upCmd(cfg *cluster.Config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster and wait until its node is Ready and its DNS answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.Up(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&cfg.SimulatedNodes, "simulated-nodes", 0, "number of kwok nodes (tainted kwok.x-k8s.io/node=fake:NoSchedule; their pods become Ready without running)")
	cmd.Flags().IntVar(&cfg.SimulatedPodCapacity, "simulated-pod-capacity", cfg.SimulatedPodCapacity, "pods each kwok node takes (its pods capacity and allocatable)")
	cmd.Flags().BoolVar(&cfg.DNSCachesClusterDomain, "dns-caches-cluster-domain", false, "make CoreDNS cache its answers for the cluster domain, \"no such name\" for 5 s, as a DNS cache in front of it would (kubeadm's Corefile does not)")
	cmd.Flags().IntVar(&cfg.APIPort, "api-port", cfg.APIPort, "host loopback port the API server is forwarded to")
	return cmd
}

func downCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop everything `up` started and remove its mounts, network namespaces, cgroups and state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.Down(cmd.Context(), cmd.OutOrStdout())
		},
	}
}

func statusCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's components and nodes; exit non-zero unless everything is up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.Status(cmd.Context(), cmd.OutOrStdout())
		},
	}
}

func loadImageCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "load-image ARCHIVE...",
		Short: "Import docker-archive tarballs into the node's containerd",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, archive := range args {
				if err := cfg.LoadImage(archive); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Loaded %s\n", archive)
			}
			return nil
		},
	}
}

func restartCmd(cfg *cluster.Config) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Stop a component (etcd, kube-apiserver, kubelet, containerd, ...) and start it again as up did, waiting until it serves",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cfg.Restart(cmd.Context(), args[0], grace, cmd.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 15*time.Second, "how long the component has to exit after SIGTERM before SIGKILL (0: SIGKILL at once)")
	return cmd
}

func logsCmd(cfg *cluster.Config) *cobra.Command {
	var tail int
	cmd := &cobra.Command{
		Use:   "logs COMPONENT",
		Short: "Print a component's log (etcd, kube-apiserver, kubelet, containerd, coredns, ...)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := cfg.Daemon(args[0])
			if _, err := os.Stat(d.LogFile); err != nil {
				return fmt.Errorf("no log for component %q: %w", args[0], err)
			}
			if tail > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), d.Tail(tail))
				return nil
			}
			data, err := os.ReadFile(d.LogFile)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().IntVar(&tail, "tail", 0, "print only the last N lines")
	return cmd
}

func envCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print shell exports for using the cluster and the test assets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := filepath.Abs(cfg.BinDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\nexport KUBEBUILDER_ASSETS=%s\nexport PATH=%s:$PATH\n", cfg.Kubeconfig(), bin, bin)
			return nil
		},
	}
}

func leftoversCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "leftovers",
		Short: "List anything of a cluster still on the machine; exit non-zero if there is any",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			left := cfg.Leftovers()
			for _, l := range left {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			if len(left) > 0 {
				return fmt.Errorf("%d leftovers", len(left))
			}
			return nil
		},
	}
}

func egressDropsCmd(cfg *cluster.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "egress-drops",
		Short: "Print how many packets bound off the machine the cluster's namespace has dropped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := cfg.EgressDrops()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), n)
			return nil
		},
	}
}

// forwardCmd is the loopback forwarder `up` runs as a daemon.
func forwardCmd() *cobra.Command {
	var ns, listen, target string
	cmd := &cobra.Command{
		Use:    "forward",
		Short:  "Relay a host loopback port to an address inside the cluster's namespace",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			return forward.Serve(cmd.Context(), ln, target, netns.Namespace{Name: ns}.DialContext)
		},
	}
	cmd.Flags().StringVar(&ns, "netns", "localkube", "network namespace of the target")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:6443", "host loopback address to listen on")
	cmd.Flags().StringVar(&target, "target", "", "address inside the namespace")
	return cmd
}

// provisionerCmd is the volume provisioner `up` runs as a daemon.
func provisionerCmd() *cobra.Command {
	var kubeconfig, dir, name string
	cmd := &cobra.Command{
		Use:    "provisioner",
		Short:  "Serve PersistentVolumeClaims with hostPath volumes under --dir",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			rc.QPS, rc.Burst = cluster.ControlPlaneQPS, cluster.ControlPlaneBurst
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			return provisioner.Run(cmd.Context(), cs, name, dir)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the provisioner's identity")
	cmd.Flags().StringVar(&dir, "dir", "", "directory that holds the volumes")
	cmd.Flags().StringVar(&name, "name", cluster.ProvisionerName, "provisioner name StorageClasses refer to")
	return cmd
}
