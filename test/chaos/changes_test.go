package chaos

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestChanges(t *testing.T) {
	decode := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	servers := func(zxid, err string) string {
		return `{"status":{"servers":{"follower":[{"name":"zk-0","lastZxid":"` + zxid + `","error":"` + err + `"}]}}}`
	}
	for _, tc := range []struct {
		name          string
		before, after string
		ignore        []string
		want          []string
	}{
		{"the same", `{"a":{"b":1}}`, `{"a":{"b":1}}`, nil, nil},
		{"a value", `{"a":{"b":1,"c":"x"}}`, `{"a":{"b":2,"c":"x"}}`, nil, []string{"a.b"}},
		{"a key added and one gone", `{"a":{"b":1}}`, `{"a":{"c":1}}`, nil, []string{"a.b", "a.c"}},
		{"an item of a list", `{"l":[{"m":"x"},{"m":"y"}]}`, `{"l":[{"m":"x"},{"m":"z"}]}`, nil, []string{"l.1.m"}},
		{"a list grown", `{"l":[1]}`, `{"l":[1,2]}`, nil, []string{"l"}},
		{"a map become a value", `{"a":{"b":1}}`, `{"a":3}`, nil, []string{"a"}},
		{"ignored by a wildcard path", servers("0x1", ""), servers("0x2", ""), []string{"status.servers.*.*.lastZxid"}, nil},
		{"ignored beside one that is not", servers("0x1", ""), servers("0x2", "timeout"), []string{"status.servers.*.*.lastZxid"}, []string{"status.servers.follower.0.error"}},
		{"ignored with everything under it", `{"status":{"jobs":{"running":1}}}`, `{"status":{"jobs":{"running":2,"error":1}}}`, []string{"status.jobs"}, nil},
		{"a pattern longer than the path ignores nothing", `{"a":1}`, `{"a":2}`, []string{"a.b"}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Changes(decode(tc.before), decode(tc.after), tc.ignore...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Changes = %v, want %v", got, tc.want)
			}
		})
	}
}
