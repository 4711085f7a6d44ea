package chaos

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Changes lists where two versions of an object (decoded JSON) differ, as
// dotted paths ("status.conditions.0.message"), sorted, leaving out the
// paths that ignore matches. A pattern is a dotted path whose "*" matches
// any one key or list index ("status.servers.*.*.lastZxid"), and it also
// covers everything under what it matches. Lists of different lengths
// differ at the list itself.
func Changes(before, after map[string]any, ignore ...string) []string {
	var out []string
	diff(nil, before, after, func(path []string) {
		for _, p := range ignore {
			if covers(strings.Split(p, "."), path) {
				return
			}
		}
		out = append(out, strings.Join(path, "."))
	})
	slices.Sort(out)
	return out
}

// diff calls found with every path under which a and b differ, as deep as
// both sides keep the same shape.
func diff(path []string, a, b any, found func([]string)) {
	at := func(key string) []string { return append(slices.Clone(path), key) }
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok {
			found(path)
			return
		}
		for k, av := range a {
			diff(at(k), av, b[k], found)
		}
		for k, bv := range b {
			if _, ok := a[k]; !ok {
				diff(at(k), nil, bv, found)
			}
		}
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			found(path)
			return
		}
		for i := range a {
			diff(at(fmt.Sprint(i)), a[i], b[i], found)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			found(path)
		}
	}
}

// covers reports whether pattern matches path or one of its parents.
func covers(pattern, path []string) bool {
	if len(pattern) > len(path) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != path[i] {
			return false
		}
	}
	return true
}
