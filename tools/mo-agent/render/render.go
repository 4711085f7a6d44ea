// Package render turns the configuration template the operator writes into
// one pod's mo-service configuration.
//
// MatrixOne reads its TOML once, with no variable expansion, and some keys
// differ per pod (the store's UUID, the host name it advertises). The
// operator writes one template per set with ${VAR} references; each pod
// fills them in from its own environment (the downward API) before
// mo-service starts. Only the variables in [Vars] exist: a reference to any
// other one is an error, so a typo in the operator's template fails the pod
// instead of becoming an empty string in MatrixOne's configuration. "$$" is a
// literal "$".
package render

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// The variables a template may reference. POD_NAME, POD_NAMESPACE and POD_IP
// come from the pod's environment; STORE_UUID is computed from the first two.
const (
	PodName      = "POD_NAME"
	PodNamespace = "POD_NAMESPACE"
	PodIP        = "POD_IP"
	StoreUUID    = "STORE_UUID"
)

// Vars lists every variable a template may reference, sorted.
var Vars = []string{PodIP, PodName, PodNamespace, StoreUUID}

// Env reads the pod's variables from the process environment (lookup is
// os.LookupEnv outside tests) and derives STORE_UUID. A missing POD_NAME or
// POD_NAMESPACE is an error; POD_IP may be absent when no template needs it.
func Env(lookup func(string) (string, bool)) (map[string]string, error) {
	env := map[string]string{}
	for _, name := range []string{PodName, PodNamespace, PodIP} {
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	if env[PodName] == "" || env[PodNamespace] == "" {
		return nil, fmt.Errorf("%s and %s must be set (the operator's pod template sets them from the downward API)", PodName, PodNamespace)
	}
	env[StoreUUID] = wire.StoreID(env[PodNamespace], env[PodName])
	return env, nil
}

// Render replaces every ${VAR} and $VAR of template with env's value.
func Render(template string, env map[string]string) (string, error) {
	var unknown, unset []string
	out := os.Expand(template, func(name string) string {
		if name == "$" {
			return "$"
		}
		v, ok := env[name]
		switch {
		case !slices.Contains(Vars, name):
			unknown = append(unknown, name)
		case !ok || v == "":
			unset = append(unset, name)
		}
		return v
	})
	var errs []error
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("the template references unknown variables %s (known: %s)", list(unknown), strings.Join(Vars, ", ")))
	}
	if len(unset) > 0 {
		errs = append(errs, fmt.Errorf("the template references %s, which the environment does not set", list(unset)))
	}
	return out, errors.Join(errs...)
}

func list(names []string) string {
	sort.Strings(names)
	return strings.Join(slices.Compact(names), ", ")
}
