package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// TestOwnedKeysMatchCRD checks that the CEL rule on spec.config in the
// generated CRD names exactly the keys and prefixes Go lists as owned by the
// operator, and that its message names them too.
func TestOwnedKeysMatchCRD(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(crdDir, "zookeeper.steward.dev_zookeeperclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Validations []struct {
									Rule    string `json:"rule"`
									Message string `json:"message"`
								} `json:"x-kubernetes-validations"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := unmarshalYAML(data, &crd); err != nil {
		t.Fatal(err)
	}
	var rule, message string
	for _, v := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["config"].Validations {
		if strings.Contains(v.Rule, "startsWith") {
			rule, message = v.Rule, v.Message
		}
	}
	if rule == "" {
		t.Fatal("no owned-keys rule on spec.config")
	}
	// The rule is "!(k in [<keys>]) && ![<prefixes>].exists(...)".
	lists := regexp.MustCompile(`\[([^\]]*)\]`).FindAllStringSubmatch(rule, -1)
	if len(lists) != 2 {
		t.Fatalf("rule %q: want two lists, found %d", rule, len(lists))
	}
	quoted := func(list string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(list, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	if got, want := quoted(lists[0][1]), sorted(zkv1.OperatorOwnedConfigKeys); !slices.Equal(got, want) {
		t.Errorf("CEL owned keys %q, Go %q", got, want)
	}
	if got, want := quoted(lists[1][1]), sorted(zkv1.OperatorOwnedConfigPrefixes); !slices.Equal(got, want) {
		t.Errorf("CEL owned prefixes %q, Go %q", got, want)
	}
	for _, k := range append(slices.Clone(zkv1.OperatorOwnedConfigKeys), zkv1.OperatorOwnedConfigPrefixes...) {
		if !strings.Contains(message, k) {
			t.Errorf("message %q does not name %s", message, k)
		}
	}
}

func TestIsOperatorOwnedConfigKey(t *testing.T) {
	for key, want := range map[string]bool{
		"dataDir":                   true,
		"4lw.commands.whitelist":    true,
		"server.1":                  true,
		"admin.serverPort":          true,
		"admin.enableServer":        true,
		"ssl.keyStore.location":     true,
		"weight.2":                  true,
		"tickTime":                  false,
		"serverCnxnFactory":         false,
		"datadir":                   false, // ZooKeeper's keys are case-sensitive
		"autopurge.snapRetainCount": false,
		"admin":                     false,
	} {
		if got := zkv1.IsOperatorOwnedConfigKey(key); got != want {
			t.Errorf("IsOperatorOwnedConfigKey(%q) = %t, want %t", key, got, want)
		}
	}
}

// unmarshalYAML decodes YAML into v. The leading comment keeps ToJSON
// from taking flow-style YAML ("{replicas: 3}") for JSON.
func unmarshalYAML(data []byte, v any) error {
	j, err := utilyaml.ToJSON(append([]byte("# yaml\n"), data...))
	if err != nil {
		return err
	}
	return json.Unmarshal(j, v)
}
