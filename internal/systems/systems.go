package systems

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Names of the systems Steward is designed to run.
const (
	GPSS      = "gpss"
	MatrixOne = "matrixone"
	OceanBase = "oceanbase"
	ZooKeeper = "zookeeper"
)

// All is the --systems value that selects every registered system.
const All = "all"

// known lists the planned systems, sorted by name.
var known = []string{GPSS, MatrixOne, OceanBase, ZooKeeper}

// preview lists the systems whose implementation is not complete yet, sorted:
// a build may register them, but "all" (and an empty --systems) leaves them
// out, so that a default install never runs a half-built system; naming
// one selects it. The chart's "all" agrees (hack/chartgen writes this list
// into its helpers). None is now: MatrixOne, the last, joined "all" when its
// issue was complete.
var preview []string

// Preview returns the names of the systems "all" leaves out, sorted.
func Preview() []string { return slices.Clone(preview) }

// IsPreview reports whether name is a system "all" leaves out.
func IsPreview(name string) bool {
	_, found := slices.BinarySearch(preview, name)
	return found
}

// Known returns the names of every system Steward is designed to run, sorted,
// whether or not this build implements it.
func Known() []string {
	return slices.Clone(known)
}

// IsKnown reports whether name is one of the systems Steward is designed to run.
func IsKnown(name string) bool {
	_, found := slices.BinarySearch(known, name)
	return found
}

// System is a data system that the manager can run.
type System struct {
	// Name is one of the names returned by [Known].
	Name string
	// Setup registers the system's API types with mgr.GetScheme() and its
	// controllers with mgr. It is called once, before the manager starts.
	Setup func(mgr ctrl.Manager) error
	// Webhooks registers the system's admission webhooks on
	// mgr.GetWebhookServer(); nil when the system has none. The manager
	// calls it once the serving certificate is in place, which may be after
	// the manager has started (the webhook server then starts at once), and
	// not at all when webhooks are disabled.
	Webhooks func(mgr ctrl.Manager) error
}

// Registry holds the systems compiled into a build, keyed by name.
// The zero value is an empty registry ready to use. A Registry is not safe
// for concurrent registration; register every system before selecting.
type Registry struct {
	systems map[string]System
}

// NewRegistry returns a registry holding the given systems. It panics, like
// [Registry.Register], if one of them is invalid or registered twice.
func NewRegistry(systems ...System) *Registry {
	r := &Registry{}
	for _, s := range systems {
		r.Register(s)
	}
	return r
}

// Register adds s to the registry.
//
// Registering is a programming act, not user input, so an invalid system
// (unknown name, nil Setup) or a duplicate name panics, in the manner of
// [net/http.Handle] and [database/sql.Register].
func (r *Registry) Register(s System) {
	switch {
	case !IsKnown(s.Name):
		panic(fmt.Sprintf("systems: cannot register unknown system %q (known: %s)", s.Name, strings.Join(known, ", ")))
	case s.Setup == nil:
		panic(fmt.Sprintf("systems: system %q has a nil Setup function", s.Name))
	}
	if _, dup := r.systems[s.Name]; dup {
		panic(fmt.Sprintf("systems: system %q registered twice", s.Name))
	}
	if r.systems == nil {
		r.systems = make(map[string]System)
	}
	r.systems[s.Name] = s
}

// Available returns the names of the registered systems, sorted.
func (r *Registry) Available() []string {
	names := make([]string, 0, len(r.systems))
	for name := range r.systems {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Select resolves a --systems value to the registered systems it names,
// sorted by name and without duplicates.
//
// The value is a comma-separated list of system names; surrounding spaces
// and empty items are ignored. An empty value, or "all", selects every
// registered system but the preview ones (Preview), which is no system at
// all when none is registered; a preview system is selected by its name.
// A name that is not known, or known but not registered in this build, is an
// error; so is "all" mixed with other names, since the intent is unclear.
// The error reports every bad name at once.
func (r *Registry) Select(spec string) ([]System, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == All {
		selected := make([]System, 0, len(r.systems))
		for _, name := range r.Available() {
			if !IsPreview(name) {
				selected = append(selected, r.systems[name])
			}
		}
		return selected, nil
	}

	var names, unknown, unavailable []string
	mixesAll := false
	for item := range strings.SplitSeq(spec, ",") {
		switch name := strings.TrimSpace(item); {
		case name == "":
			continue
		case name == All:
			mixesAll = true
		case !IsKnown(name):
			unknown = append(unknown, name)
		case r.systems[name].Setup == nil:
			unavailable = append(unavailable, name)
		default:
			names = append(names, name)
		}
	}

	var problems []string
	if mixesAll {
		problems = append(problems, fmt.Sprintf("%q cannot be combined with system names", All))
	}
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("unknown %s (known: %s)", named(unknown), strings.Join(known, ", ")))
	}
	if len(unavailable) > 0 {
		verb := "is"
		if len(unavailable) > 1 {
			verb = "are"
		}
		problems = append(problems, fmt.Sprintf("%s %s not available in this build (available: %s)",
			named(unavailable), verb, r.availableList()))
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}

	if len(names) == 0 {
		return nil, fmt.Errorf("no system named in %q", spec)
	}

	slices.Sort(names)
	names = slices.Compact(names)
	selected := make([]System, 0, len(names))
	for _, name := range names {
		selected = append(selected, r.systems[name])
	}
	return selected, nil
}

// availableList formats the registered names for error messages.
func (r *Registry) availableList() string {
	if len(r.systems) == 0 {
		return "none"
	}
	return strings.Join(r.Available(), ", ")
}

// named formats names, sorted and without duplicates, for error messages:
// `system "a"` or `systems "a", "b"`.
func named(names []string) string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = strconv.Quote(name)
	}
	if len(quoted) == 1 {
		return "system " + quoted[0]
	}
	return "systems " + strings.Join(quoted, ", ")
}
