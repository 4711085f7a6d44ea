package kubectlsteward

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// StatusOptions are the status command's.
type StatusOptions struct {
	// AllNamespaces lists every namespace's objects.
	AllNamespaces bool
	// AllKinds lists the objects other Steward objects own too (zones,
	// servers, log and CN sets, ...), not only those a user made.
	AllKinds bool
	// Output is "", "wide", "json" or "yaml".
	Output string
}

// listed is one object the status command shows.
type listed struct {
	gvk schema.GroupVersionKind
	row
}

// Status lists the Steward objects of namespace (every namespace with
// AllNamespaces): by default those no other Steward object owns, the
// clusters, tenants, backups and operations users create. Each line says
// what runs as its kind's printer columns say it, and the object's last
// Event; a user who may not list Events still gets the rest, with a note.
func (c *CLI) Status(ctx context.Context, namespace string, o StatusOptions) error {
	var all []listed
	for _, gvk := range stewardKinds(c.scheme) {
		rows, err := c.listRows(ctx, gvk, namespace, o.AllNamespaces, o.Output == "wide")
		if err != nil {
			return err
		}
		for _, r := range rows {
			if o.AllKinds || !ownedBySteward(r.obj) {
				all = append(all, listed{gvk: gvk, row: r})
			}
		}
	}
	switch o.Output {
	case "json", "yaml":
		items := make([]any, len(all))
		for i, l := range all {
			items[i] = l.obj
		}
		return c.print(o.Output, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	case "", "wide":
	default:
		return fmt.Errorf("output %q: want wide, json or yaml", o.Output)
	}
	if len(all) == 0 {
		where := "in namespace " + namespace
		if o.AllNamespaces {
			where = "in any namespace"
		}
		fmt.Fprintf(c.Err, "No Steward objects found %s.\n", where)
		return nil
	}
	events, err := c.lastEvents(ctx, namespace, o.AllNamespaces)
	if err != nil {
		fmt.Fprintf(c.Err, "The LAST EVENT column is empty: %v\n", err)
	}
	return c.printTable(all, events, o)
}

// printTable prints the status command's table of the objects listed,
// with the last Event of each (by UID).
func (c *CLI) printTable(all []listed, events map[types.UID]eventsv1.Event, o StatusOptions) error {
	w := printers.GetNewTabWriter(c.Out)
	header := []string{"NAME", "SYSTEM", "READY", "REASON", "RUNS", "OPERATION", "LAST EVENT", "AGE"}
	if o.AllNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if o.Output == "wide" {
		header = append(header, "MESSAGE")
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	now := c.now()
	for _, l := range all {
		ready := meta.FindStatusCondition(l.obj.StatusCore().Conditions, framework.ConditionReady)
		status, reason, message := "Unknown", "", ""
		if ready != nil {
			status, reason, message = string(ready.Status), ready.Reason, ready.Message
		}
		last := "-"
		if e, ok := events[l.obj.GetUID()]; ok {
			last = eventSummary(e, now, o.Output == "wide")
		}
		row := []string{kindName(l.gvk, l.obj.GetName()), systemOf(l.gvk.GroupKind()), status, dash(reason), dash(l.runs),
			operationSummary(l.obj.StatusCore().Operation), last, age(now, l.obj.GetCreationTimestamp())}
		if o.AllNamespaces {
			row = append([]string{l.obj.GetNamespace()}, row...)
		}
		if o.Output == "wide" {
			row = append(row, dash(oneLine(message)))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// ownedBySteward reports whether a Steward object controls obj.
func ownedBySteward(obj framework.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && strings.HasSuffix(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).Group, groupSuffix)
}

// Describe shows one object: Ready and why, every condition, the flow and
// its step, the rest of its status, and its last Events.
func (c *CLI) Describe(ctx context.Context, namespace, typ, name, output string) error {
	gvk, obj, err := c.get(ctx, namespace, typ, name)
	if err != nil {
		return err
	}
	switch output {
	case "json", "yaml":
		return c.print(output, obj)
	case "", "wide":
	default:
		return fmt.Errorf("output %q: want wide, json or yaml", output)
	}
	now := c.now()
	for _, section := range []func(schema.GroupVersionKind, framework.Object, time.Time) error{c.describeHeader, c.describeConditions, c.describeOperation} {
		if err := section(gvk, obj, now); err != nil {
			return err
		}
	}
	// The rest of the status: what runs (members, servers, tenants...),
	// as each kind reports it.
	rest, err := statusRest(obj)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		b, err := yaml.Marshal(rest)
		if err != nil {
			return err
		}
		fmt.Fprintln(c.Out, "\nStatus:")
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			fmt.Fprintln(c.Out, "  "+line)
		}
	}
	return c.describeEvents(ctx, obj, now)
}

// describeHeader shows the object's name, system, Ready, pause and
// whether its spec was observed.
func (c *CLI) describeHeader(gvk schema.GroupVersionKind, obj framework.Object, _ time.Time) error {
	core := obj.StatusCore()
	w := printers.GetNewTabWriter(c.Out)
	fmt.Fprintf(w, "Name:\t%s\nNamespace:\t%s\nSystem:\t%s\n", kindName(gvk, obj.GetName()), obj.GetNamespace(), systemOf(gvk.GroupKind()))
	ready := meta.FindStatusCondition(core.Conditions, framework.ConditionReady)
	switch {
	case ready == nil:
		fmt.Fprintf(w, "Ready:\tUnknown (the controller has not reported yet)\n")
	case ready.Status == metav1.ConditionTrue:
		fmt.Fprintf(w, "Ready:\tTrue\t%s\n", oneLine(ready.Message))
	default:
		fmt.Fprintf(w, "Ready:\t%s\t%s: %s\n", ready.Status, ready.Reason, oneLine(ready.Message))
	}
	if framework.IsPaused(obj) {
		fmt.Fprintf(w, "Paused:\ttrue (kubectl steward resume %s)\n", kindName(gvk, obj.GetName()))
	}
	observed := "yes"
	if core.ObservedGeneration != obj.GetGeneration() {
		observed = fmt.Sprintf("no: generation %d, observed %d", obj.GetGeneration(), core.ObservedGeneration)
	}
	fmt.Fprintf(w, "Spec observed:\t%s\n", observed)
	return w.Flush()
}

// describeConditions shows every condition.
func (c *CLI) describeConditions(_ schema.GroupVersionKind, obj framework.Object, now time.Time) error {
	fmt.Fprintln(c.Out, "\nConditions:")
	w := printers.GetNewTabWriter(c.Out)
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, cond := range obj.StatusCore().Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", cond.Type, cond.Status, dash(cond.Reason), age(now, cond.LastTransitionTime), dash(oneLine(cond.Message)))
	}
	return w.Flush()
}

// describeOperation shows the running or last flow, and how to rescue a
// failed one.
func (c *CLI) describeOperation(gvk schema.GroupVersionKind, obj framework.Object, now time.Time) error {
	fmt.Fprintln(c.Out, "\nOperation:")
	op := obj.StatusCore().Operation
	if op == nil {
		fmt.Fprintln(c.Out, "  none has run")
		return nil
	}
	w := printers.GetNewTabWriter(c.Out)
	fmt.Fprintf(w, "  Flow:\t%s (%s)\n  Phase:\t%s\n", op.Name, dash(op.Trigger), op.Phase)
	if op.Step != "" {
		fmt.Fprintf(w, "  Step:\t%s\n", op.Step)
	}
	if op.Attempts > 0 {
		fmt.Fprintf(w, "  Failed attempts:\t%d, last: %s\n", op.Attempts, oneLine(op.LastError))
	}
	if op.Message != "" {
		fmt.Fprintf(w, "  Message:\t%s\n", oneLine(op.Message))
	}
	fmt.Fprintf(w, "  Started:\t%s ago\n", age(now, op.StartedAt))
	if op.FinishedAt != nil {
		fmt.Fprintf(w, "  Finished:\t%s ago\n", age(now, *op.FinishedAt))
	}
	if op.Phase == commonv1.PhaseFailed {
		fmt.Fprintf(w, "  Rescue:\tkubectl steward rescue retry|skip|abort %s\n", kindName(gvk, obj.GetName()))
	}
	return w.Flush()
}

// statusRest is obj's status without what Describe showed already.
func statusRest(obj framework.Object) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"conditions", "operation", "observedGeneration"} {
		delete(m.Status, k)
	}
	return m.Status, nil
}

// maxEvents is how many of an object's Events Describe shows.
const maxEvents = 10

// describeEvents shows obj's last Events, newest last.
func (c *CLI) describeEvents(ctx context.Context, obj framework.Object, now time.Time) error {
	var list eventsv1.EventList
	if err := c.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return fmt.Errorf("list Events: %w", err)
	}
	var events []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == obj.GetUID() {
			events = append(events, e)
		}
	}
	slices.SortFunc(events, func(a, b eventsv1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	fmt.Fprintln(c.Out, "\nEvents:")
	if len(events) == 0 {
		fmt.Fprintln(c.Out, "  none (Events are kept for an hour)")
		return nil
	}
	w := printers.GetNewTabWriter(c.Out)
	fmt.Fprintln(w, "  AGE\tTYPE\tREASON\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", age(now, metav1.NewTime(eventTime(e))), e.Type, e.Reason, oneLine(e.Note))
	}
	return w.Flush()
}

// eventTime is when an Event last happened.
func eventTime(e eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// eventSummary is an Event in a column: "3m ScaledIn", "Warning 10s
// FlowFailed"; wide adds its note.
func eventSummary(e eventsv1.Event, now time.Time, wide bool) string {
	s := age(now, metav1.NewTime(eventTime(e))) + " " + e.Reason
	if e.Type != "" && e.Type != corev1.EventTypeNormal {
		s = e.Type + " " + s
	}
	if wide && e.Note != "" {
		s += ": " + oneLine(e.Note)
	}
	return s
}

// operationSummary is a flow in a column: "scale/grow Running", "upgrade
// Succeeded", "-" when none ran.
func operationSummary(op *commonv1.Operation) string {
	if op == nil {
		return "-"
	}
	name := op.Name
	if op.Step != "" && op.Phase != commonv1.PhaseSucceeded {
		name += "/" + op.Step
	}
	s := name + " " + string(op.Phase)
	if op.Attempts > 0 && op.Phase == commonv1.PhaseRunning {
		s += fmt.Sprintf(" (failed %d)", op.Attempts)
	}
	return s
}

// print writes v as JSON or YAML.
func (c *CLI) print(output string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if output == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(c.Out, strings.TrimRight(string(b), "\n"))
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a message on one line of a table.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// age is kubectl's AGE of t.
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
