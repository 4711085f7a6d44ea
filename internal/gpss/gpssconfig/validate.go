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
// operator owns (OwnedKeys: each has its own spec field) in any letter
// case, no two keys of an object alike but for letter case, and every port
// (a key named Port or ending in Port, as DebugPort) a number in 1-65535
// that no other port in the file or in taken (the owned ports, by the
// spec field that sets each) uses.
//
// Letter case matters because GPSS reads gpss.json as encoding/json does,
// matching keys in any case: "cluster" is its Cluster, and of two keys
// alike but for case it silently takes one.
func Validate(user []byte, path *field.Path, taken map[string]int) field.ErrorList {
	var errs field.ErrorList
	var doc map[string]any
	if err := json.Unmarshal(user, &doc); err != nil || doc == nil {
		return append(errs, field.Invalid(path, string(user), "must be a JSON object"))
	}
	for _, key := range OwnedKeys {
		for _, keys := range Find(doc, key) {
			errs = append(errs, field.Forbidden(keyPath(path, keys),
				"set by the operator from "+ownerField[key]+"; remove it from config"))
		}
	}
	errs = append(errs, keysAlikeButForCase(doc, path)...)
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
		p := keyPath(path, keys)
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

// Find returns where a decoded gpss.json holds dottedKey
// ("Cluster.Etcd.Endpoints") as GPSS reads it: each key matched in any
// letter case, as encoding/json matches a struct's fields
// (strings.EqualFold is its rule). Each path is the keys as the document
// spells them, in key order; more than one means GPSS would read the key
// from several places and keep one.
func Find(doc map[string]any, dottedKey string) [][]string {
	paths, values := [][]string{nil}, []any{doc}
	for _, want := range strings.Split(dottedKey, ".") {
		var nextPaths [][]string
		var nextValues []any
		for i, v := range values {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if strings.EqualFold(k, want) {
					nextPaths = append(nextPaths, append(slices.Clone(paths[i]), k))
					nextValues = append(nextValues, m[k])
				}
			}
		}
		paths, values = nextPaths, nextValues
	}
	return paths
}

// keysAlikeButForCase refuses every key of an object in v (at path) that
// differs only by letter case from another key of the same object: GPSS
// would take one of them and drop the other without a word.
func keysAlikeButForCase(v any, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for i, k := range keys {
			for _, earlier := range keys[:i] {
				if strings.EqualFold(k, earlier) {
					errs = append(errs, field.Duplicate(path.Key(k), fmt.Sprintf(
						"%s, the same key as %s to GPSS, which reads keys in any letter case and would take only one", k, earlier)))
					break
				}
			}
			errs = append(errs, keysAlikeButForCase(v[k], path.Key(k))...)
		}
	case []any:
		for i, e := range v {
			errs = append(errs, keysAlikeButForCase(e, path.Index(i))...)
		}
	}
	return errs
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

// keyPath is the field path of the document's keys under path
// (spec.config[Cluster][Id]).
func keyPath(path *field.Path, keys []string) *field.Path {
	for _, k := range keys {
		path = path.Key(k)
	}
	return path
}
