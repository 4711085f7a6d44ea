package gpssconfig

import (
	"encoding/json"
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
