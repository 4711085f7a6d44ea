package kubectlsteward

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stewardhq/steward/internal/version"
)

// connect makes the CLI of a command's run from the parsed flags, and
// returns the namespace the flags name (or the kubeconfig's).
type connect func() (*CLI, string, error)

// NewCommand is "kubectl steward": kubectl's connection flags
// (--kubeconfig, --context, -n, ...) and the plugin's commands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-steward",
		Short: "See and steer the clusters Steward runs",
		Long: `kubectl steward shows the Steward objects (ZooKeeper, MatrixOne, OceanBase and GPSS
clusters, tenants, backups, operations): whether each is Ready and why not, and the
flow it runs. It pauses and resumes their reconciliation, rescues a failed flow, and
shows the log of the operator replica that leads.`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	flags.AddFlags(root.PersistentFlags())
	var wait time.Duration
	root.PersistentFlags().DurationVar(&wait, "wait", 10*time.Second, "how long pause, resume and rescue wait for the controller to act")

	cli := func() (*CLI, string, error) {
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, "", err
		}
		mapper, err := flags.ToRESTMapper()
		if err != nil {
			return nil, "", err
		}
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, "", err
		}
		c, err := New(cfg, mapper, streams.Out, streams.ErrOut)
		if err != nil {
			return nil, "", err
		}
		c.Wait = wait
		return c, ns, nil
	}
	root.AddCommand(newStatusCommand(cli), newPauseCommand(cli, true), newPauseCommand(cli, false),
		newRescueCommand(cli), newLogsCommand(cli))
	return root
}

func newStatusCommand(cli connect) *cobra.Command {
	var o StatusOptions
	cmd := &cobra.Command{
		Use:   "status [TYPE/NAME | TYPE NAME]",
		Short: "Show Steward objects: Ready and why not, and the flow each runs",
		Long: `Without an object: one line per Steward object of the namespace (-A: of every namespace)
that no other Steward object owns (--all-kinds: every one). With one: its conditions, its
flow and step, the rest of its status and its last Events.`,
		Example: `  kubectl steward status -A
  kubectl steward status zk/zk1
  kubectl steward status obtenant t1 -o yaml`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := cli()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return c.Status(cmd.Context(), ns, o)
			}
			typ, name, err := parseRef(args)
			if err != nil {
				return err
			}
			return c.Describe(cmd.Context(), ns, typ, name, o.Output)
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	cmd.Flags().BoolVar(&o.AllKinds, "all-kinds", false, "list the objects other Steward objects own too (zones, servers, sets, ...)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "wide, json or yaml")
	return cmd
}

func newPauseCommand(cli connect, paused bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause TYPE/NAME",
		Short: "Stop reconciling an object (spec.paused, or the steward.dev/paused annotation)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := cli()
			if err != nil {
				return err
			}
			typ, name, err := parseRef(args)
			if err != nil {
				return err
			}
			return c.SetPaused(cmd.Context(), ns, typ, name, paused)
		},
	}
	if !paused {
		cmd.Use, cmd.Short = "resume TYPE/NAME", "Reconcile a paused object again"
	}
	return cmd
}

func newRescueCommand(cli connect) *cobra.Command {
	return &cobra.Command{
		Use:   "rescue retry|skip|abort TYPE/NAME",
		Short: "Retry, skip or abort the current step of an object's failed flow",
		Long: `Sets the steward.dev/operation-rescue annotation, which the controller acts on once and
removes: retry runs the step again with a fresh attempt budget, skip goes on with the next
step, abort ends the flow.`,
		Example: `  kubectl steward rescue retry zk/zk1`,
		Args:    cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := cli()
			if err != nil {
				return err
			}
			typ, name, err := parseRef(args[1:])
			if err != nil {
				return err
			}
			return c.Rescue(cmd.Context(), ns, args[0], typ, name)
		},
	}
}

func newLogsCommand(cli connect) *cobra.Command {
	o := LogsOptions{Namespace: "steward-system", Tail: 50}
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Show the log of the Steward replica that leads (the one that reconciles)",
		Long: `Finds the replica holding Steward's leader Lease in the operator's namespace and shows
its log: the other replicas wait and log little.`,
		Example: `  kubectl steward logs --tail 100
  kubectl steward logs -f --operator-namespace steward`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := cli()
			if err != nil {
				return err
			}
			return c.Logs(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Namespace, "operator-namespace", o.Namespace, "the namespace Steward is installed in")
	cmd.Flags().Int64Var(&o.Tail, "tail", o.Tail, "lines of the end of the log to show; -1 for all")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "stream the log")
	return cmd
}
