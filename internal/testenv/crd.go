package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CELRule is one x-kubernetes-validations rule of a generated CRD.
type CELRule struct {
	// Kind is the CRD's kind.
	Kind string
	// Path is the field the API server reports a violation at: the schema
	// node the rule sits on, then the rule's fieldPath. "" is the object
	// itself; "[]" stands for any item of a list ("spec.cnGroups[].storage").
	Path string
	// Message is the rule's message.
	Message string
}

func (r CELRule) String() string { return fmt.Sprintf("%s %s: %s", r.Kind, r.Path, r.Message) }

// CRDs reads the generated CRDs of group in dir and returns their kinds and
// every CEL rule of their schemas (all versions), sorted.
func CRDs(t *testing.T, dir, group string) (kinds []string, rules []CELRule) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, group+"_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs of %s in %s: %v", group, dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Names    struct{ Kind string } `json:"names"`
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kind := crd.Spec.Names.Kind
		kinds = append(kinds, kind)
		for _, v := range crd.Spec.Versions {
			walkRules(kind, "", v.Schema.OpenAPIV3Schema, &rules)
		}
	}
	slices.Sort(kinds)
	slices.SortFunc(rules, func(a, b CELRule) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(kinds), slices.Compact(rules)
}

func walkRules(kind, path string, node map[string]any, out *[]CELRule) {
	rules, _ := node["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		msg, _ := rule["message"].(string)
		if msg == "" {
			msg, _ = rule["rule"].(string) // the API server reports the rule itself
		}
		fieldPath, _ := rule["fieldPath"].(string)
		*out = append(*out, CELRule{Kind: kind, Path: strings.TrimPrefix(path+fieldPath, "."), Message: msg})
	}
	props, _ := node["properties"].(map[string]any)
	for name, p := range props {
		if p, ok := p.(map[string]any); ok {
			walkRules(kind, path+"."+name, p, out)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		walkRules(kind, path+"[]", items, out)
	}
	if values, ok := node["additionalProperties"].(map[string]any); ok {
		walkRules(kind, path+"[*]", values, out)
	}
}

// Violation is an object that breaks one CEL rule: New is created and
// must be refused; or, for a rule on a change (oldSelf), Old is created,
// must be accepted, and its spec replaced by New's must be refused.
type Violation struct {
	Rule     CELRule
	Old, New *unstructured.Unstructured
}

// CheckCELRules checks that every rule has a violation and that every
// violation is refused by the API server as Invalid, with the rule's
// message at the rule's field. A rule added to a CRD without a violation
// here fails the test, naming the rule.
func CheckCELRules(t *testing.T, c client.Client, rules []CELRule, violations []Violation) {
	t.Helper()
	for _, r := range rules {
		if !slices.ContainsFunc(violations, func(v Violation) bool { return v.Rule == r }) {
			t.Errorf("CEL rule %s has no violating object in the test: add one", r)
		}
	}
	for _, v := range violations {
		t.Run(v.Rule.String(), func(t *testing.T) {
			if !slices.Contains(rules, v.Rule) {
				t.Fatalf("no CRD has the rule %s", v.Rule)
			}
			checkRefused(t, v.Rule, violate(t, c, v))
		})
	}
}

// violate sends v's object to the API server and returns its answer.
func violate(t *testing.T, c client.Client, v Violation) error {
	t.Helper()
	ctx := context.Background()
	if v.Old == nil {
		return c.Create(ctx, v.New.DeepCopy())
	}
	old := v.Old.DeepCopy()
	if err := c.Create(ctx, old); err != nil {
		t.Fatalf("creating the object before the change: %v", err)
	}
	changed := old.DeepCopy()
	changed.Object["spec"] = runtime.DeepCopyJSONValue(v.New.Object["spec"])
	return c.Update(ctx, changed)
}

// checkRefused checks that err refuses an object for breaking r.
func checkRefused(t *testing.T, r CELRule, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want refused with %q", r.Message)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v is not Invalid", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, r.Message) {
		t.Errorf("error %q does not say %q", msg, r.Message)
	}
	// The field, up to its first list index (the object picks which item
	// breaks the rule).
	field, _, _ := strings.Cut(r.Path, "[")
	if field != "" && !strings.Contains(msg, field) {
		t.Errorf("error %q does not name the field %s", msg, field)
	}
}

// Defaults is a minimal object of one kind and the Go function that
// defaults it (api/<system>'s Default...).
type Defaults struct {
	// Minimal is the object as a user writes it, with as little as the
	// kind admits.
	Minimal *unstructured.Unstructured
	// Typed is an empty object of the kind's Go type.
	Typed client.Object
	// Default is the Go defaulting of the kind.
	Default func(client.Object)
	// GoOnly are the fields (JSON paths, "spec.zones[0].replicas") that
	// only Default fills in, because they depend on the object (a name
	// derived from metadata.name) in a way no schema default can say.
	GoOnly []string
}

// CheckDefaults checks, for each kind of kinds, that the CRD's schema
// defaults and the Go Default agree on its minimal object: the object
// created on the API server and then given to Default equals the minimal
// object given to Default alone, and on the created object Default fills
// in exactly the GoOnly fields. Every kind must have a case.
func CheckDefaults(t *testing.T, c client.Client, kinds []string, cases []Defaults) {
	t.Helper()
	for _, k := range kinds {
		if !slices.ContainsFunc(cases, func(d Defaults) bool { return d.Minimal.GetKind() == k }) {
			t.Errorf("kind %s has no minimal object in the defaults test: add one", k)
		}
	}
	ctx := context.Background()
	for _, d := range cases {
		t.Run(d.Minimal.GetKind()+" "+d.Minimal.GetName(), func(t *testing.T) {
			if !slices.Contains(kinds, d.Minimal.GetKind()) {
				t.Fatalf("no CRD has the kind %s", d.Minimal.GetKind())
			}
			if err := c.Create(ctx, d.Minimal.DeepCopy()); err != nil {
				t.Fatalf("creating the minimal object: %v", err)
			}
			got := d.Typed.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(d.Minimal), got); err != nil {
				t.Fatal(err)
			}
			want := d.Typed.DeepCopyObject().(client.Object)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Minimal.Object, want); err != nil {
				t.Fatal(err)
			}
			d.Default(want)
			schema := spec(t, got)
			d.Default(got)
			both := spec(t, got)
			if diff := diffPaths("spec", spec(t, want), both); len(diff) > 0 {
				t.Errorf("the schema's defaults and Default disagree at %s:\nschema, then Default: %v\nDefault alone:        %v",
					strings.Join(diff, ", "), both, spec(t, want))
			}
			goOnly := diffPaths("spec", schema, both)
			slices.Sort(goOnly)
			wantGoOnly := slices.Sorted(slices.Values(d.GoOnly))
			if !slices.Equal(goOnly, wantGoOnly) {
				t.Errorf("Default fills in %v after the schema's defaults, want only %v (a default both can say belongs in the schema too)",
					goOnly, wantGoOnly)
			}
		})
	}
}

// spec returns obj's spec as JSON values.
func spec(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := u["spec"].(map[string]any)
	return s
}

// diffPaths returns the paths below path where a and b differ: a map key
// in one and not the other, or different leaves. Lists of equal length
// are compared item by item.
func diffPaths(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			out = append(out, diffPaths(path+"."+k, am[k], bm[k])...)
		}
		slices.Sort(out)
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diffPaths(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{path}
}

// Object returns an unstructured object of apiVersion and kind named name
// in namespace ns, whose spec is the YAML specYAML, so that a test can
// send any field, zero values included.
func Object(t *testing.T, apiVersion, kind, ns, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("spec of %s %s: %v", kind, name, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
}

// Fixtures makes the objects of one API group's tests in one namespace.
type Fixtures struct {
	T          *testing.T
	APIVersion string
	Namespace  string
	n          int
}

// Object returns an object of kind named name ("" for a fresh name)
// whose spec is specYAML.
func (f *Fixtures) Object(kind, name, specYAML string) *unstructured.Unstructured {
	f.T.Helper()
	if name == "" {
		f.n++
		name = fmt.Sprintf("%s-%d", strings.ToLower(kind), f.n)
	}
	return Object(f.T, f.APIVersion, kind, f.Namespace, name, specYAML)
}

// Create is the violation of r by creating an object of r's kind named
// name ("" for a fresh name) with spec.
func (f *Fixtures) Create(r CELRule, name, spec string) Violation {
	f.T.Helper()
	return Violation{Rule: r, New: f.Object(r.Kind, name, spec)}
}

// Change is the violation of r by changing the spec of an object of r's
// kind from from to to.
func (f *Fixtures) Change(r CELRule, from, to string) Violation {
	f.T.Helper()
	old := f.Object(r.Kind, "", from)
	return Violation{Rule: r, Old: old, New: f.Object(r.Kind, old.GetName(), to)}
}
