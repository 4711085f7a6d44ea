package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/manager"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestNamespacedInstall installs the RBAC a namespace-scoped rendering
// makes (watchNamespaces) into a real API server and runs the manager as
// its ServiceAccount, with the flags the Deployment gives it: a
// ZookeeperCluster in the watched namespace is reconciled (its finalizer,
// its StatefulSet and its status: the Roles grant what the controller
// needs), one in another namespace is untouched, and the ServiceAccount
// can read nothing there.
func TestNamespacedInstall(t *testing.T) {
	helm(t)
	cfg := server.Config(t)
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(zkv1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	opNS, watched, other := testenv.Namespace(t, c, "steward-"), testenv.Namespace(t, c, "watched-"), testenv.Namespace(t, c, "other-")

	manifest := render(t, "default", "--namespace", opNS, "--set", "watchNamespaces={"+watched+"}", "--set", "webhook.enabled=false")
	var args []string
	for _, o := range objects(t, manifest) {
		switch o.Kind {
		case "Deployment":
			args = decode[appsv1.Deployment](t, o).Spec.Template.Spec.Containers[0].Args
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(o.raw, &u.Object); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(t.Context(), u); err != nil {
				t.Fatalf("install %s %s: %v", o.Kind, o.Metadata.Name, err)
			}
			if u.GetNamespace() == "" {
				t.Cleanup(func() { _ = c.Delete(context.Background(), u) })
			}
		}
	}
	if !slices.Contains(args, "--watch-namespaces="+watched) {
		t.Fatalf("the Deployment's args %q do not watch %s", args, watched)
	}

	opts := manager.NewOptions()
	opts.Systems, opts.WatchNamespaces = "zookeeper", []string{watched}
	opts.LeaderElectionNamespace = opNS // the leader-election Role's namespace
	opts.MetricsBindAddress, opts.HealthProbeBindAddress, opts.ShutdownDelay = "0", "0", 0
	opts.Webhooks.Enabled = false
	opts.Logger = testenv.Logger(t, 0)
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + opNS + ":" + release + "-controller-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + opNS, "system:authenticated"},
	}
	mgr, err := manager.New(as, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	})

	zk := func(ns string) *zkv1.ZookeeperCluster {
		return &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zk"}, Spec: zkv1.ZookeeperClusterSpec{Replicas: 1}}
	}
	for _, ns := range []string{watched, other} {
		if err := c.Create(t.Context(), zk(ns)); err != nil {
			t.Fatal(err)
		}
	}
	mine := zk(watched)
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(mine), mine); err != nil {
			return false, err
		}
		sts := &appsv1.StatefulSet{}
		return len(mine.Finalizers) > 0 && mine.Status.ObservedGeneration == mine.Generation &&
			c.Get(ctx, client.ObjectKey{Namespace: watched, Name: "zk"}, sts) == nil, nil
	})
	if err != nil {
		t.Fatalf("the watched namespace's ZookeeperCluster was not reconciled: %v; status %+v", err, mine.Status.StatusCore)
	}
	for _, cond := range mine.Status.Conditions {
		if strings.Contains(cond.Message, "forbidden") {
			t.Errorf("condition %s says the operator was refused: %s", cond.Type, cond.Message)
		}
	}
	t.Logf("Reconciled in %s: finalizer, StatefulSet, status %v", watched, mine.Status.Conditions)

	time.Sleep(2 * time.Second) // the manager's passes are sub-second here
	theirs := zk(other)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(theirs), theirs); err != nil {
		t.Fatal(err)
	}
	if len(theirs.Finalizers) > 0 || len(theirs.Status.Conditions) > 0 || theirs.Status.ObservedGeneration != 0 {
		t.Errorf("the unwatched namespace's ZookeeperCluster was touched: finalizers %v, status %+v", theirs.Finalizers, theirs.Status.StatusCore)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: other, Name: "zk"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a StatefulSet in the unwatched namespace: %v", err)
	}
	asClient, err := client.New(as, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := asClient.List(t.Context(), &corev1.SecretList{}, client.InNamespace(other)); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's ServiceAccount lists Secrets in an unwatched namespace: %v, want forbidden", err)
	}
}

// TestNamespacedWebhooksSeeOnlyTheirNamespaces: with watchNamespaces, every
// webhook selects those namespaces only, so the API server never asks the
// operator about an object it does not watch (and could not read).
func TestNamespacedWebhooksSeeOnlyTheirNamespaces(t *testing.T) {
	hooks := 0
	for _, o := range objects(t, render(t, "namespaced")) {
		if o.Kind != "ValidatingWebhookConfiguration" && o.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		var config struct {
			Webhooks []struct {
				Name              string                `json:"name"`
				NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
			} `json:"webhooks"`
		}
		if err := yaml.Unmarshal(o.raw, &config); err != nil {
			t.Fatal(err)
		}
		for _, h := range config.Webhooks {
			hooks++
			sel := h.NamespaceSelector
			if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != corev1.LabelMetadataName ||
				sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpIn || strings.Join(sel.MatchExpressions[0].Values, ",") != "team-a,team-b" {
				t.Errorf("%s webhook %s selects namespaces %+v, want kubernetes.io/metadata.name in (team-a, team-b)", o.Kind, h.Name, sel)
			}
		}
	}
	if hooks == 0 {
		t.Error("the namespaced rendering has no webhooks")
	}
}
