package render

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	env := map[string]string{PodName: "mo-log-0", PodNamespace: "default", PodIP: "10.0.0.7", StoreUUID: "u-0"}
	for _, tc := range []struct {
		name, template, want, err string
	}{
		{name: "braced and bare", template: `uuid = "${STORE_UUID}"` + "\n" + `sql-address = "$POD_IP:6001"`,
			want: `uuid = "u-0"` + "\n" + `sql-address = "10.0.0.7:6001"`},
		{name: "host name", template: `service-host = "${POD_NAME}.mo-log-headless.${POD_NAMESPACE}.svc"`,
			want: `service-host = "mo-log-0.mo-log-headless.default.svc"`},
		{name: "dollar escaped", template: `x = "a$$b"`, want: `x = "a$b"`},
		{name: "nothing to expand", template: "[log]\nlevel = \"info\"\n", want: "[log]\nlevel = \"info\"\n"},
		{name: "unknown variable", template: `x = "${POD_NAEM}" y = "$HOME"`, err: "unknown variables HOME, POD_NAEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(tc.template, env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestRenderUnset(t *testing.T) {
	_, err := Render(`sql-address = "${POD_IP}:6001"`, map[string]string{PodName: "p", PodNamespace: "n"})
	if err == nil || !strings.Contains(err.Error(), "POD_IP, which the environment does not set") {
		t.Fatalf("error %v, want POD_IP reported as unset", err)
	}
}

func TestEnv(t *testing.T) {
	lookup := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	env, err := Env(lookup(map[string]string{PodName: "mo-log-1", PodNamespace: "default"}))
	if err != nil {
		t.Fatal(err)
	}
	if env[StoreUUID] != "e2595557-d655-5375-8d50-0e223a28d018" {
		t.Errorf("STORE_UUID = %s", env[StoreUUID])
	}
	if _, err := Env(lookup(map[string]string{PodName: "mo-log-1"})); err == nil {
		t.Error("Env without POD_NAMESPACE: no error")
	}
}
