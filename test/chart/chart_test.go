package chart

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/internal/systems"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current chart")

const (
	chartDir = "../../charts/steward"
	// kubeVersion is what helm template renders for (offline, helm assumes
	// an old version the chart refuses): the version localkube runs.
	kubeVersion = "1.36.0"
	release     = "steward"
	namespace   = "steward-system"
)

// cases are the value sets rendered against golden files: the defaults,
// and testdata/<name>.values.yaml.
var cases = []string{"default", "ha-cert-manager", "minimal", "namespaced"}

// helm returns the pinned helm binary, skipping the test when it is not
// installed, and failing instead under CI.
func helm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = "../../bin/helm"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("helm is not installed at %s (run make helm): %v", bin, err)
		}
		t.Skipf("helm is not installed at %s (run make helm)", bin)
	}
	return bin
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), errors.New(strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func valuesArgs(name string) []string {
	if name == "default" {
		return nil
	}
	return []string{"--values", filepath.Join("testdata", name+".values.yaml")}
}

// render runs helm template for a case and returns its output.
func render(t *testing.T, name string, extra ...string) string {
	t.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}, valuesArgs(name)...)
	out, err := run(t, append(args, extra...)...)
	if err != nil {
		t.Fatalf("helm template (%s): %v", name, err)
	}
	return out
}

// object is one rendered document: its kind and name, and the document.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	raw []byte
}

func objects(t *testing.T, manifest string) []object {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufioReader(manifest))
	var objs []object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if o.Kind == "" {
			continue
		}
		o.raw = doc
		objs = append(objs, o)
	}
}

func decode[T any](t *testing.T, o object) *T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(o.raw, &v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
	return &v
}

func TestLint(t *testing.T) {
	for _, name := range cases {
		args := append([]string{"lint", "--strict", chartDir, "--namespace", namespace}, valuesArgs(name)...)
		if out, err := run(t, args...); err != nil {
			t.Errorf("helm lint (%s): %v\n%s", name, err, out)
		}
	}
}

// TestGolden compares each rendering with testdata/<case>.golden.yaml, so
// that a review sees every change to what the chart installs.
func TestGolden(t *testing.T) {
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			got := render(t, name)
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./test/chart -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the %s rendering differs from %s; review the change and run go test ./test/chart -update:\n%s",
					name, golden, lineDiff(string(want), got))
			}
		})
	}
}

// TestAdmissionSurvivesOneReplica checks what keeps admission up in the
// default install while one operator pod goes: two replicas spread over
// nodes, a rolling update that starts a new replica before stopping an old
// one, a PodDisruptionBudget letting one go at a time, and a termination
// grace period covering the shutdown delay and the graceful shutdown. A
// single replica gets no budget, which would block every node drain.
func TestAdmissionSurvivesOneReplica(t *testing.T) {
	var deployment *appsv1.Deployment
	var budget *policyv1.PodDisruptionBudget
	for _, o := range objects(t, render(t, "default")) {
		switch o.Kind {
		case "Deployment":
			deployment = decode[appsv1.Deployment](t, o)
		case "PodDisruptionBudget":
			budget = decode[policyv1.PodDisruptionBudget](t, o)
		}
	}
	if deployment == nil || budget == nil {
		t.Fatalf("the default rendering lacks the Deployment (%v) or the PodDisruptionBudget (%v)", deployment != nil, budget != nil)
	}
	if r := deployment.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("replicas = %v, want 2", r)
	}
	if u := deployment.Spec.Strategy.RollingUpdate; u == nil || u.MaxUnavailable.IntValue() != 0 || u.MaxSurge.IntValue() != 1 {
		t.Errorf("rolling update %+v, want maxSurge 1 and maxUnavailable 0", u)
	}
	pod := deployment.Spec.Template.Spec
	if s := pod.TopologySpreadConstraints; len(s) != 1 || s[0].TopologyKey != corev1.LabelHostname ||
		s[0].LabelSelector == nil || !maps.Equal(s[0].LabelSelector.MatchLabels, deployment.Spec.Selector.MatchLabels) {
		t.Errorf("topology spread %+v, want the replicas spread over nodes", s)
	}
	if b := budget.Spec; b.MaxUnavailable == nil || b.MaxUnavailable.IntValue() != 1 ||
		!maps.Equal(b.Selector.MatchLabels, deployment.Spec.Selector.MatchLabels) {
		t.Errorf("budget %+v, want maxUnavailable 1 over the Deployment's pods", b)
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	if !strings.Contains(args, "--shutdown-delay=5s") || !strings.Contains(args, "--graceful-shutdown-timeout=20s") {
		t.Errorf("args %q, want the 5s shutdown delay and 20s graceful shutdown", args)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 5+20+10 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 35 (delay, graceful shutdown and 10s)", g)
	}
	for _, o := range objects(t, render(t, "default", "--set", "replicas=1")) {
		if o.Kind == "PodDisruptionBudget" {
			t.Error("a single replica got a PodDisruptionBudget: it would block every node drain")
		}
	}
}

// TestRBACHasNoWildcards checks every Role and ClusterRole any case renders
// (the generated manager role and the hand-written ones): every verb,
// resource, group and URL is named, and none grants escalate, bind or
// impersonate.
func TestRBACHasNoWildcards(t *testing.T) {
	roles := 0
	for _, name := range cases {
		for _, o := range objects(t, render(t, name)) {
			if o.Kind != "Role" && o.Kind != "ClusterRole" {
				continue
			}
			roles++
			role := decode[rbacv1.ClusterRole](t, o)
			if len(role.Rules) == 0 {
				t.Errorf("%s %s has no rules", o.Kind, o.Metadata.Name)
			}
			for i, r := range role.Rules {
				for field, values := range map[string][]string{
					"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups,
					"nonResourceURLs": r.NonResourceURLs, "resourceNames": r.ResourceNames,
				} {
					if slices.ContainsFunc(values, func(v string) bool { return strings.Contains(v, "*") }) {
						t.Errorf("%s %s rule %d has a wildcard in %s: %v", o.Kind, o.Metadata.Name, i, field, values)
					}
				}
				for _, verb := range []string{"escalate", "bind", "impersonate"} {
					if slices.Contains(r.Verbs, verb) {
						t.Errorf("%s %s rule %d grants %s", o.Kind, o.Metadata.Name, i, verb)
					}
				}
			}
		}
	}
	if roles < 5 {
		t.Errorf("found %d roles in the renderings, want at least 5 (manager, leader election, webhook cert x2, metrics reader)", roles)
	}
}

// TestPodIsHardened checks the operator's pod in every case: non-root, no
// privilege escalation, read-only root filesystem, no capabilities,
// RuntimeDefault seccomp; and the ServiceAccount mounts no token into pods
// that do not ask for one.
func TestPodIsHardened(t *testing.T) {
	for _, name := range cases {
		for _, o := range objects(t, render(t, name)) {
			switch o.Kind {
			case "ServiceAccount":
				if sa := decode[corev1.ServiceAccount](t, o); sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Errorf("%s: ServiceAccount %s mounts its token into every pod", name, o.Metadata.Name)
				}
			case "Deployment":
				pod := decode[appsv1.Deployment](t, o).Spec.Template.Spec
				psc := pod.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod security context %+v, want non-root with RuntimeDefault seccomp", name, psc)
				}
				for _, c := range pod.Containers {
					sc := c.SecurityContext
					if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
						sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
						sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
						t.Errorf("%s: container %s security context %+v, want read-only root, no escalation, all capabilities dropped", name, c.Name, sc)
					}
				}
			}
		}
	}
}

// TestWebhooksFollowSystems checks that the webhook configurations carry
// the webhooks of the selected systems only (those controller-gen wrote to
// files/manifests.yaml for the systems' API groups), point at the release's
// Service, and are absent when webhooks are off.
func TestWebhooksFollowSystems(t *testing.T) {
	generated := generatedHooks(t)
	if len(generated["MutatingWebhookConfiguration"]) == 0 || len(generated["ValidatingWebhookConfiguration"]) == 0 {
		t.Fatalf("files/manifests.yaml has no mutating or no validating webhook: %v", generated)
	}
	selections := []string{"all", "gpss, zookeeper"}
	for _, hooks := range generated {
		for system := range hooks {
			selections = append(selections, system)
		}
	}
	// A known system without webhooks (none, once every system has some)
	// selects none.
	for _, system := range systems.Known() {
		if generated["MutatingWebhookConfiguration"][system]+generated["ValidatingWebhookConfiguration"][system] == 0 {
			selections = append(selections, system)
		}
	}
	slices.Sort(selections)
	for _, sel := range slices.Compact(selections) {
		configs := 0
		for _, o := range objects(t, render(t, "default", "--set-json", fmt.Sprintf("systems=%q", sel))) {
			var hooks []admissionregistrationv1.WebhookClientConfig
			switch o.Kind {
			case "MutatingWebhookConfiguration":
				for _, h := range decode[admissionregistrationv1.MutatingWebhookConfiguration](t, o).Webhooks {
					hooks = append(hooks, h.ClientConfig)
				}
			case "ValidatingWebhookConfiguration":
				for _, h := range decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, o).Webhooks {
					hooks = append(hooks, h.ClientConfig)
				}
			default:
				continue
			}
			configs++
			want := 0
			for system, n := range generated[o.Kind] {
				// "all" leaves the preview systems out, as the chart does.
				if sel == "all" && !systems.IsPreview(system) || slices.Contains(strings.Split(strings.ReplaceAll(sel, " ", ""), ","), system) {
					want += n
				}
			}
			if len(hooks) != want {
				t.Errorf("systems=%q: %s has %d webhooks, want %d", sel, o.Kind, len(hooks), want)
			}
			for _, h := range hooks {
				if s := h.Service; s == nil || s.Name != "steward-webhook" || s.Namespace != namespace || s.Port == nil || *s.Port != 443 {
					t.Errorf("systems=%q: %s points at %+v, want steward-webhook.%s:443", sel, o.Kind, s, namespace)
				}
			}
		}
		if configs != 2 {
			t.Errorf("systems=%q: %d webhook configurations, want 2", sel, configs)
		}
	}
	for _, o := range objects(t, render(t, "minimal")) {
		if strings.HasSuffix(o.Kind, "WebhookConfiguration") {
			t.Errorf("webhook.enabled=false still renders %s %s", o.Kind, o.Metadata.Name)
		}
	}
}

// generatedHooks counts the webhooks of files/manifests.yaml by kind of
// configuration and by system (the first label of the API group).
func generatedHooks(t *testing.T) map[string]map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "files", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]int{}
	for _, o := range objects(t, string(data)) {
		var config struct {
			Webhooks []struct {
				Rules []admissionregistrationv1.RuleWithOperations `json:"rules"`
			} `json:"webhooks"`
		}
		if err := yaml.Unmarshal(o.raw, &config); err != nil {
			t.Fatal(err)
		}
		if counts[o.Kind] == nil {
			counts[o.Kind] = map[string]int{}
		}
		for _, h := range config.Webhooks {
			if len(h.Rules) == 0 || len(h.Rules[0].APIGroups) == 0 {
				t.Fatalf("a %s webhook without an API group", o.Kind)
			}
			system, _, _ := strings.Cut(h.Rules[0].APIGroups[0], ".")
			if !systems.IsKnown(system) {
				t.Errorf("a %s webhook for %s, which is no known system's group", o.Kind, h.Rules[0].APIGroups[0])
			}
			counts[o.Kind][system]++
		}
	}
	return counts
}

// TestRejectedValues checks that bad values fail the install with a
// message naming the problem, from the schema or the templates.
func TestRejectedValues(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"replicas=2,leaderElection.enabled=false", "leaderElection.enabled must be true when replicas > 1"},
		{"systems=etcd", "systems"},
		{"replicas=0", "replicas"},
		{"logLevel=loud", "logLevel"},
		{"webhook.failurePolicy=Sometimes", "failurePolicy"},
		{"serviceAccount.create=false", "serviceAccount.name is required"},
		{"unknownKey=1", "unknownKey"},
		{"watchNamespaces={Team_A}", "watchNamespaces"},
		{"metrics.pprof=true,metrics.secure=false", "metrics.pprof needs metrics.secure"},
	} {
		out, err := run(t, "template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s rendered without error:\n%.300s", tc.set, out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s failed with %q, want it to mention %q", tc.set, err, tc.want)
		}
	}
}

// TestNotesPointAtSamples renders the install notes (helm template leaves
// NOTES.txt out, so a copy of the chart renders it as a template) and checks
// that they name the sample of every kind the chart installs, and only
// the selected systems' samples.
func TestNotesPointAtSamples(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "steward")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "notes-as-template.yaml"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	samples, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample in config/samples: %v", err)
	}
	// "all" leaves the preview systems out (systems.Preview); naming one
	// selects it.
	for _, sel := range append([]string{"all", "gpss"}, systems.Preview()...) {
		out, err := run(t, "template", release, dir, "--namespace", namespace, "--kube-version", kubeVersion,
			"--show-only", "templates/notes-as-template.yaml", "--set", "systems="+sel)
		if err != nil {
			t.Fatalf("rendering NOTES.txt: %v", err)
		}
		for _, s := range samples {
			system, _, _ := strings.Cut(filepath.Base(s), "_")
			line := "kubectl apply -f config/samples/" + filepath.Base(s)
			want := sel == system || sel == "all" && !systems.IsPreview(system)
			if strings.Contains(out, line) != want {
				t.Errorf("systems=%s: the notes name %s: %v, want %v:\n%s", sel, filepath.Base(s), !want, want, out)
			}
		}
	}
}
