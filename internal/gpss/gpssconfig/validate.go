package gpssconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a user's configuration (the API's spec.config, at path)
// before anything is rendered from it: a JSON object, none of the keys the
// operator owns (OwnedKeys: each has its own spec field), and every port
// (a key named Port or ending in Port, as DebugPort) a number in 1-65535
// that no other port in the file or in taken (the owned ports, by the
// spec field that sets each) uses.
func Validate(user []byte, path *field.Path, taken map[string]int) field.ErrorList {
	var errs field.ErrorList
	var doc map[string]any
	if err := json.Unmarshal(user, &doc); err != nil || doc == nil {
		return append(errs, field.Invalid(path, string(user), "must be a JSON object"))
	}
	for _, key := range OwnedKeys {
		if _, ok := Lookup(doc, key); ok {
			errs = append(errs, field.Forbidden(dotted(path, key),
				"set by the operator from "+ownerField[key]+"; remove it from config"))
		}
	}
	// Ports, in a stable order: the owned ones by their spec fields, then
	// the file's by their paths.
	type port struct {
		where string
		path  *field.Path
		n     int
	}
	var ports []port
	for _, name := range slices.Sorted(maps.Keys(taken)) {
		ports = append(ports, port{where: name, n: taken[name]})
	}
	walk(doc, nil, func(keys []string, v any) {
		last := keys[len(keys)-1]
		if !strings.HasSuffix(last, "Port") {
			return
		}
		p := dotted(path, strings.Join(keys, "."))
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || !ValidPort(int(f)) {
			errs = append(errs, field.Invalid(p, v, "must be a port number, 1-65535"))
			return
		}
		ports = append(ports, port{where: p.String(), path: p, n: int(f)})
	})
	for i, p := range ports {
		for _, q := range ports[:i] {
			if p.n == q.n && p.path != nil {
				errs = append(errs, field.Duplicate(p.path, fmt.Sprintf("%d, already the port of %s", p.n, q.where)))
				break
			}
		}
	}
	return errs
}

// ownerField names the spec field that sets each owned key.
var ownerField = map[string]string{
	"ListenAddress.Host":     "the pod (every address)",
	"ListenAddress.Port":     "spec.ports.grpc",
	"Gpfdist.Host":           "the pod (every address)",
	"Gpfdist.Port":           "spec.ports.gpfdist",
	"Cluster.Id":             "spec.clusterID",
	"Cluster.Port":           "spec.ports.cluster",
	"Cluster.Etcd.Endpoints": "spec.etcd",
}

// Lookup returns the value at dottedKey ("Cluster.Etcd.Endpoints") in a
// decoded gpss.json, and whether it is there.
func Lookup(doc map[string]any, dottedKey string) (any, bool) {
	var v any = doc
	for _, k := range strings.Split(dottedKey, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// walk calls fn for every leaf and object member of doc, in key order,
// with the keys leading to it.
func walk(v any, keys []string, fn func(keys []string, v any)) {
	m, ok := v.(map[string]any)
	if !ok {
		if len(keys) > 0 {
			fn(keys, v)
		}
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		walk(m[k], append(slices.Clone(keys), k), fn)
	}
}

func dotted(path *field.Path, key string) *field.Path {
	for _, k := range strings.Split(key, ".") {
		path = path.Key(k)
	}
	return path
}
