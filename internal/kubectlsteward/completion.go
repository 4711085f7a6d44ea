package kubectlsteward

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// completeObject completes the object a command takes, as kubectl's
// completion does: a Steward type the API server serves, as TYPE/ (its
// kind in lower case), then the names of the namespace's objects of the
// type typed, whether written TYPE/NAME or TYPE NAME. skip is how many
// arguments come before the object (rescue's verb).
func completeObject(cli connect, skip int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) < skip {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		args = args[skip:]
		c, ns, err := cli()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		switch typ, _, slash := strings.Cut(toComplete, "/"); {
		case len(args) == 0 && !slash:
			return c.servedTypes(), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		case len(args) == 0:
			names := c.objectNames(cmd.Context(), ns, typ)
			for i, name := range names {
				names[i] = typ + "/" + name
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			return c.objectNames(cmd.Context(), ns, args[0]), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// servedTypes are "kind/" for every Steward kind the API server serves.
func (c *CLI) servedTypes() []cobra.Completion {
	var out []cobra.Completion
	for _, gvk := range stewardKinds(c.scheme) {
		if _, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			out = append(out, strings.ToLower(gvk.Kind)+"/")
		}
	}
	return out
}

// objectNames are the names of namespace's objects of typ; none when typ
// is not a Steward type or they cannot be listed (completion stays quiet).
func (c *CLI) objectNames(ctx context.Context, namespace, typ string) []cobra.Completion {
	gvk, err := resolve(c.mapper, c.scheme, typ)
	if err != nil {
		return nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	names := make([]cobra.Completion, len(list.Items))
	for i, item := range list.Items {
		names[i] = item.Name
	}
	return names
}

// completeRescue completes rescue's verb, then its object.
func completeRescue(cli connect) cobra.CompletionFunc {
	object := completeObject(cli, 1)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			verbs := []cobra.Completion{string(commonv1.RescueRetry), string(commonv1.RescueSkip), string(commonv1.RescueAbort)}
			return verbs, cobra.ShellCompDirectiveNoFileComp
		}
		return object(cmd, args, toComplete)
	}
}

// completeOutput completes -o.
func completeOutput(formats ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp)
}
