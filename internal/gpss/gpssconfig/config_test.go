package gpssconfig

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, file, wantErr string
	}{
		{name: "a cluster member",
			file: `{"ListenAddress":{"Host":"","Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Id":"c1","Etcd":{"Endpoints":["etcd:2379"]}}}`},
		{name: "standalone", file: `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080}}`},
		{name: "not JSON", file: `{"ListenAddress":`, wantErr: "gpss.json: unexpected EOF"},
		{name: "two values", file: `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080}} {}`, wantErr: "more than one JSON value"},
		{name: "no cluster id",
			file:    `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Etcd":{"Endpoints":["e:2379"]}}}`,
			wantErr: "Cluster.Id is empty"},
		{name: "no etcd", file: `{"ListenAddress":{"Port":5000},"Gpfdist":{"Port":8080},"Cluster":{"Id":"c"}}`,
			wantErr: "Cluster.Etcd.Endpoints is empty"},
		{name: "no ports", file: `{}`, wantErr: "ListenAddress.Port 0 is not a port (1-65535); Gpfdist.Port 0 is not a port"},
		{name: "a port out of range", file: `{"ListenAddress":{"Port":70000},"Gpfdist":{"Port":8080}}`,
			wantErr: "ListenAddress.Port 70000 is not a port"},
		{name: "a port that is text", file: `{"ListenAddress":{"Port":"5000"},"Gpfdist":{"Port":8080}}`,
			wantErr: "cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Parse: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRenderOwnsItsKeysAndKeepsTheRest(t *testing.T) {
	owned := Owned{ClusterID: "orders", EtcdEndpoints: []string{"http://e-0:2379", "http://e-1:2379"},
		GRPCPort: 5000, GpfdistPort: 8080, ClusterPort: 5001}
	out, err := Render([]byte(`{"Logging":{"BackendLevel":"debug"},"ListenAddress":{"DebugPort":9000}}`), owned)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(out)
	if err != nil {
		t.Fatalf("Render's output does not parse: %v\n%s", err, out)
	}
	if c.Cluster == nil || c.Cluster.ID != "orders" || c.Cluster.Port != 5001 ||
		strings.Join(c.Cluster.Etcd.Endpoints, ",") != "http://e-0:2379,http://e-1:2379" ||
		c.ListenAddress.Port != 5000 || c.Gpfdist.Port != 8080 {
		t.Fatalf("rendered %+v (cluster %+v)", c, c.Cluster)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["Logging"]["BackendLevel"] != "debug" || doc["ListenAddress"]["DebugPort"] != float64(9000) {
		t.Errorf("the user's keys were not kept:\n%s", out)
	}
	again, _ := Render([]byte(`{"ListenAddress":{"DebugPort":9000},"Logging":{"BackendLevel":"debug"}}`), owned)
	if string(again) != string(out) {
		t.Errorf("the same configuration in another key order rendered differently:\n%s\n%s", out, again)
	}
	if _, err := Render([]byte(`{"Cluster":"x"}`), owned); err == nil || !strings.Contains(err.Error(), "Cluster is not an object") {
		t.Errorf("Render over a Cluster that is not an object: %v", err)
	}
}

// GPSS reads gpss.json's keys in any letter case, as encoding/json does:
// a user's "cluster" is GPSS's Cluster. The rendered file must hold each
// owned key once, with the operator's value, whatever case the user wrote
// (Validate refuses such a configuration; Render must not depend on it).
func TestRenderHoldsEachOwnedKeyOnceInAnyLetterCase(t *testing.T) {
	owned := Owned{ClusterID: "orders", EtcdEndpoints: []string{"http://e-0:2379"},
		GRPCPort: 5000, GpfdistPort: 8080, ClusterPort: 5001}
	out, err := Render([]byte(`{"cluster":{"id":"other","ETCD":{"endpoints":["http://elsewhere:2379"]}},"listenaddress":{"DebugPort":9000}}`), owned)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(out)
	if err != nil {
		t.Fatalf("Render's output does not parse: %v\n%s", err, out)
	}
	if c.Cluster == nil || c.Cluster.ID != "orders" || strings.Join(c.Cluster.Etcd.Endpoints, ",") != "http://e-0:2379" {
		t.Errorf("GPSS would read cluster %+v from:\n%s", c.Cluster, out)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "Cluster,Gpfdist,ListenAddress" || len(doc["Cluster"]) != 3 ||
		doc["ListenAddress"]["DebugPort"] != float64(9000) {
		t.Errorf("want the user's keys spelled as the operator's, each once, the user's DebugPort kept:\n%s", out)
	}
	if _, err := Render([]byte(`{"Cluster":{},"cluster":{}}`), owned); err == nil || !strings.Contains(err.Error(), "letter case") {
		t.Errorf("Render of Cluster and cluster: %v, want an error (GPSS would take one of them)", err)
	}
}

func TestFind(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"Cluster":{"Id":"a"},"cluster":{"ID":"b","Etcd":{}},"Other":{"Id":"c"}}`), &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"Cluster.Id":   "[[Cluster Id] [cluster ID]]",
		"CLUSTER.etcd": "[[cluster Etcd]]",
		"Cluster.Port": "[]",
		"Id":           "[]",
	} {
		if got := fmt.Sprint(Find(doc, key)); got != want {
			t.Errorf("Find(%s) = %s, want %s", key, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	taken := map[string]int{"spec.ports.grpc": 5000, "spec.ports.gpfdist": 8080, "spec.ports.cluster": 5001}
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{name: "empty", config: `{}`},
		{name: "GPSS's own settings", config: `{"Logging":{"BackendLevel":"info"},"ListenAddress":{"DebugPort":9000},"KeepAlive":{"Time":"10s"}}`},
		{name: "not an object", config: `[1]`, want: []string{"spec.config: Invalid value: \"[1]\": must be a JSON object"}},
		{name: "not JSON", config: `{`, want: []string{"spec.config: Invalid value: \"{\": must be a JSON object"}},
		{name: "the cluster id", config: `{"Cluster":{"Id":"other"}}`,
			want: []string{"spec.config[Cluster][Id]: Forbidden: set by the operator from spec.clusterID; remove it from config"}},
		{name: "the etcd endpoints and the gRPC port", config: `{"Cluster":{"Etcd":{"Endpoints":["x:2379"]}},"ListenAddress":{"Port":5000}}`,
			want: []string{
				"spec.config[ListenAddress][Port]: Forbidden: set by the operator from spec.ports.grpc",
				"spec.config[Cluster][Etcd][Endpoints]: Forbidden: set by the operator from spec.etcd",
				// Also a duplicate of the owned gRPC port.
				"spec.config[ListenAddress][Port]: Duplicate value: \"5000, already the port of spec.ports.grpc\"",
			}},
		{name: "a debug port out of range", config: `{"ListenAddress":{"DebugPort":0}}`,
			want: []string{"spec.config[ListenAddress][DebugPort]: Invalid value: 0: must be a port number, 1-65535"}},
		{name: "a debug port that is text", config: `{"ListenAddress":{"DebugPort":"9000"}}`,
			want: []string{"spec.config[ListenAddress][DebugPort]: Invalid value: \"9000\": must be a port number, 1-65535"}},
		{name: "a debug port on the gpfdist port", config: `{"ListenAddress":{"DebugPort":8080}}`,
			want: []string{"spec.config[ListenAddress][DebugPort]: Duplicate value: \"8080, already the port of spec.ports.gpfdist\""}},
		{name: "two of the file's ports alike", config: `{"A":{"Port":7000},"B":{"MetricsPort":7000}}`,
			want: []string{"spec.config[B][MetricsPort]: Duplicate value: \"7000, already the port of spec.config[A][Port]\""}},
		// GPSS reads keys in any letter case (issue 27): an owned key in
		// another case is the owned key.
		{name: "the cluster id in lower case", config: `{"cluster":{"id":"other"}}`,
			want: []string{"spec.config[cluster][id]: Forbidden: set by the operator from spec.clusterID; remove it from config"}},
		{name: "the etcd endpoints in mixed case", config: `{"CLUSTER":{"etcd":{"EndPoints":["x:2379"]}}}`,
			want: []string{"spec.config[CLUSTER][etcd][EndPoints]: Forbidden: set by the operator from spec.etcd"}},
		{name: "an owned block in another case, its owned keys absent", config: `{"listenaddress":{"DebugPort":9000}}`},
		{name: "two keys alike but for case", config: `{"Logging":{"BackendLevel":"info"},"logging":{"BackendLevel":"debug"}}`,
			want: []string{"spec.config[logging]: Duplicate value: \"logging, the same key as Logging to GPSS"}},
		{name: "nested keys alike but for case", config: `{"Logging":{"BackendLevel":"info","backendlevel":"debug"},"Tasks":[{"Name":"a","NAME":"b"}]}`,
			want: []string{
				"spec.config[Logging][backendlevel]: Duplicate value: \"backendlevel, the same key as BackendLevel to GPSS",
				"spec.config[Tasks][0][Name]: Duplicate value: \"Name, the same key as NAME to GPSS",
			}},
		{name: "the cluster id twice", config: `{"Cluster":{"Id":"a"},"cluster":{"id":"b"}}`,
			want: []string{
				"spec.config[Cluster][Id]: Forbidden: set by the operator from spec.clusterID",
				"spec.config[cluster][id]: Forbidden: set by the operator from spec.clusterID",
				"spec.config[cluster]: Duplicate value: \"cluster, the same key as Cluster to GPSS",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate([]byte(tc.config), field.NewPath("spec", "config"), taken)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Validate:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d:\n  %s\nwant it to start with\n  %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}
