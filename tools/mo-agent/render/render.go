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
	"crypto/sha1" //nolint:gosec // RFC 4122 name-based UUIDs (version 5) are defined over SHA-1.
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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
	env[StoreUUID] = StoreID(env[PodNamespace], env[PodName])
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

// namespaceUUID is the RFC 4122 namespace of Steward's MatrixOne store IDs.
var namespaceUUID = [16]byte{0x7c, 0xb8, 0x80, 0x8d, 0xb4, 0xc1, 0x4c, 0xaf, 0x9f, 0x4e, 0x64, 0x1f, 0x16, 0x7e, 0xe9, 0xc5}

// StoreID is the UUID a pod's MatrixOne store runs as: an RFC 4122 version 5
// UUID of "<namespace>/<pod>", so a StatefulSet pod keeps its store's
// identity across restarts and the operator can name a log set's first
// stores (HAKeeper's initial members) before they exist. The operator
// computes the same function (internal/matrixone/build); both test the same
// vectors.
func StoreID(namespace, pod string) string {
	h := sha1.New() //nolint:gosec // see the import
	h.Write(namespaceUUID[:])
	h.Write([]byte(namespace + "/" + pod))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
