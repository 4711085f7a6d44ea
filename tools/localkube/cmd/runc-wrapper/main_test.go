package main

import (
	"encoding/json"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args            []string
		command, bundle string
	}{
		{[]string{"--root", "/run/runc", "--log", "/x.log", "create", "--bundle", "/b", "id"}, "create", "/b"},
		{[]string{"run", "-b", "/b2", "id"}, "run", "/b2"},
		{[]string{"create", "--bundle=/b3", "id"}, "create", "/b3"},
		{[]string{"create", "id"}, "create", "."},
		{[]string{"--root", "/r", "state", "id"}, "state", "."},
	}
	for _, tt := range tests {
		c, b := parse(tt.args)
		if c != tt.command || b != tt.bundle {
			t.Errorf("parse(%v) = %q, %q; want %q, %q", tt.args, c, b, tt.command, tt.bundle)
		}
	}
}

func TestClampOOMScoreAdj(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		changed bool
		want    int64
	}{
		{"negative is clamped", `{"ociVersion":"1.0.2","process":{"oomScoreAdj":-998,"user":{"uid":0}},"hostname":"x"}`, true, 0},
		{"positive is kept", `{"process":{"oomScoreAdj":1000}}`, false, 1000},
		{"absent stays absent", `{"process":{}}`, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := clampOOMScoreAdj([]byte(tt.in))
			if err != nil || changed != tt.changed {
				t.Fatalf("changed %v, err %v", changed, err)
			}
			var spec struct {
				OCIVersion string `json:"ociVersion"`
				Hostname   string `json:"hostname"`
				Process    struct {
					OOMScoreAdj int64 `json:"oomScoreAdj"`
					User        struct {
						UID int `json:"uid"`
					} `json:"user"`
				} `json:"process"`
			}
			if err := json.Unmarshal(out, &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Process.OOMScoreAdj != tt.want {
				t.Errorf("oomScoreAdj %d, want %d", spec.Process.OOMScoreAdj, tt.want)
			}
			if tt.changed && (spec.OCIVersion != "1.0.2" || spec.Hostname != "x") {
				t.Errorf("other fields lost: %s", out)
			}
		})
	}
}
