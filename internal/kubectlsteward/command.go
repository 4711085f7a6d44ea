package kubectlsteward

import (
	"context"
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
	root.SetOut(streams.Out) // help, --version and completion
	root.SetErr(streams.ErrOut)
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
		newRescueCommand(cli), newBackupCommand(cli), newRestoreCommand(cli), newLogsCommand(cli))
	return root
}

// onObject is the RunE of a command on one object (TYPE/NAME or TYPE
// NAME): it connects, reads the reference and runs.
func onObject(cli connect, run func(ctx context.Context, c *CLI, namespace, typ, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, ns, err := cli()
		if err != nil {
			return err
		}
		typ, name, err := parseRef(args)
		if err != nil {
			return err
		}
		return run(cmd.Context(), c, ns, typ, name)
	}
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
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: completeObject(cli, 0),
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
	_ = cmd.RegisterFlagCompletionFunc("output", completeOutput("wide", "json", "yaml"))
	return cmd
}

func newPauseCommand(cli connect, paused bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "pause TYPE/NAME",
		Short:             "Stop reconciling an object (spec.paused, or the steward.dev/paused annotation)",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeObject(cli, 0),
		RunE: onObject(cli, func(ctx context.Context, c *CLI, ns, typ, name string) error {
			return c.SetPaused(ctx, ns, typ, name, paused)
		}),
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
		Example:           `  kubectl steward rescue retry zk/zk1`,
		Args:              cobra.RangeArgs(2, 3),
		ValidArgsFunction: completeRescue(cli),
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

func newBackupCommand(cli connect) *cobra.Command {
	var o BackupOptions
	cmd := &cobra.Command{
		Use:   "backup TYPE/NAME",
		Short: "Back up an OceanBase tenant or a MatrixOne cluster now",
		Long: `Creates one backup object and says how to follow it. For an OBTenant, an OBTenantBackup
to the destinations of the tenant's OBTenantBackupPolicy, encrypted as the policy's backups
are unless --encryption-secret names another Secret. For a MatrixOneCluster, a BackupJob to
--volume-claim, or to the destination of the cluster's BackupSchedule (--schedule when it has
several).`,
		Example: `  kubectl steward backup obtenant/t1
  kubectl steward backup obtenant/t1 --incremental
  kubectl steward backup mo/mo1 --volume-claim backups`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeObject(cli, 0),
		RunE: onObject(cli, func(ctx context.Context, c *CLI, ns, typ, name string) error {
			return c.Backup(ctx, ns, typ, name, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the backup object's name (default <name>-<UTC time>)")
	f.BoolVar(&o.Incremental, "incremental", false, "OceanBase: an incremental backup (what changed since the last backup set)")
	f.BoolVar(&o.PlusArchivelog, "plus-archivelog", false, "OceanBase: the backup set carries the archive pieces its restore needs")
	f.StringVar(&o.EncryptionSecret, "encryption-secret", "", "OceanBase: the Secret whose key \"password\" encrypts the backup (default: the policy's)")
	f.StringVar(&o.VolumeClaim, "volume-claim", "", "MatrixOne: the volume claim the backup is written to")
	f.StringVar(&o.Schedule, "schedule", "", "MatrixOne: the BackupSchedule whose destination the backup is written to")
	return cmd
}

func newRestoreCommand(cli connect) *cobra.Command {
	var o RestoreOptions
	cmd := &cobra.Command{
		Use:   "restore TYPE/NAME --to NEW",
		Short: "Restore an OceanBase tenant's backups into a new tenant",
		Long: `Creates a new OBTenant shaped as the one named (cluster, units, zones, primary zone,
variables), restored from the destinations of that tenant's OBTenantBackupPolicy and opened
with the policy's encryption Secret. The new tenant keeps the backed-up users, so it takes
the source tenant's root password Secret. A restore never overwrites a tenant: OceanBase
refuses a tenant name it already has.`,
		Example: `  kubectl steward restore obtenant/t1 --to t1-copy
  kubectl steward restore obtenant/t1 --to t1-before --until-time 2026-11-29T06:00:00Z
  kubectl steward restore obtenant/t1 --to t1-dr --cluster ob-dr --replay-archive`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeObject(cli, 0),
		RunE: onObject(cli, func(ctx context.Context, c *CLI, ns, typ, name string) error {
			return c.Restore(ctx, ns, typ, name, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.To, "to", "", "the new OBTenant's name (required)")
	f.StringVar(&o.Cluster, "cluster", "", "the OBCluster the new tenant is made on (default: the source tenant's)")
	f.StringVar(&o.UntilTime, "until-time", "", "restore to this RFC 3339 time (default: as far as the archive reaches)")
	f.Int64Var(&o.UntilSCN, "until-scn", 0, "restore to this SCN")
	f.BoolVar(&o.Standby, "standby", false, "the new tenant stays a read-only standby at the restore point")
	f.BoolVar(&o.ReplayArchive, "replay-archive", false, "the new tenant is a standby that keeps replaying the archive (implies --standby)")
	return cmd
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
