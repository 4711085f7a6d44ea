package kubectlsteward_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/kubectlsteward"
	"github.com/stewardhq/steward/internal/testenv"
)

// kubeconfig writes a kubeconfig file for cfg, as a user of the plugin has.
func kubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// plugin runs "kubectl steward args..." and returns what it printed and
// its error.
func plugin(t *testing.T, kc, ns string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := kubectlsteward.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kc, "--cache-dir", filepath.Join(filepath.Dir(kc), "cache"), "-n", ns, "--wait", "1s"}, args...))
	cmd.SetContext(t.Context())
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

// event records an Event about obj, as a controller's recorder does.
func event(t *testing.T, c client.Client, obj client.Object, typ, reason, note string, at time.Time) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), GenerateName: obj.GetName() + "-"},
		Regarding: corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()},
		EventTime: metav1.NewMicroTime(at), ReportingController: "steward.dev/test", ReportingInstance: "test",
		Action: "Reconcile", Reason: reason, Note: note, Type: typ,
	}
	if err := c.Create(t.Context(), e); err != nil {
		t.Fatal(err)
	}
}

// setStatus writes obj's status core.
func setStatus(t *testing.T, c client.Client, obj interface {
	client.Object
	StatusCore() *commonv1.StatusCore
}, set func(*commonv1.StatusCore)) {
	t.Helper()
	set(obj.StatusCore())
	if err := c.Status().Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

func mustContain(t *testing.T, what, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("%s: no %q in:\n%s", what, p, out)
		}
	}
}

// TestPlugin runs the plugin's commands against a real API server, as a
// user would with a kubeconfig and short names: status lists the objects
// users make (not those Steward objects own, unless --all-kinds), shows
// one with its conditions, flow and rescue hint, prints JSON; pause and
// resume set and clear spec.paused; rescue sets the annotation and reports
// the flow once the controller took it; it refuses an object with no
// flow and a kind that is not Steward's.
func TestPlugin(t *testing.T) {
	cfg := server.Config(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c, "plugin-")
	kc := kubeconfig(t, cfg)

	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zk1"}, Spec: zkv1.ZookeeperClusterSpec{Replicas: 3}}
	ob := &obv1.OBCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob"}, Spec: obv1.OBClusterSpec{
		Image: "localhost/obsim:1.0", Zones: []obv1.OBZoneSpec{{Name: "z1"}}}}
	for _, o := range []client.Object{zk, ob} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	zone := &obv1.OBZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ob-z1", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: obv1.GroupVersion.String(), Kind: "OBCluster", Name: "ob", UID: ob.UID, Controller: ptr.To(true)}}},
		Spec: obv1.OBZoneViewSpec{Cluster: "ob", Zone: "z1"}}
	if err := c.Create(t.Context(), zone); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	zk.Status.Leader, zk.Status.Members = "zk1-1", []int32{1, 2, 3}
	setStatus(t, c, zk, func(s *commonv1.StatusCore) {
		s.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "3 of 3 servers serve", LastTransitionTime: now}}
	})
	event(t, c, zk, corev1.EventTypeNormal, "MemberJoined", "server 3 joined the ensemble", now.Add(-2*time.Minute))
	event(t, c, zk, corev1.EventTypeNormal, "ScaledOut", "3 servers", now.Add(-time.Minute))
	event(t, c, ob, corev1.EventTypeWarning, "FlowFailed", "upgrade failed at upgrade-zones", now.Add(-30*time.Second))
	ob.Status.ActiveServers, ob.Status.RootService = 2, "10.0.0.1:2882"
	setStatus(t, c, ob, func(s *commonv1.StatusCore) {
		s.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ServersNotServing", Message: "zone z1 is INACTIVE", LastTransitionTime: now}}
		s.Operation = &commonv1.Operation{Name: "upgrade", Trigger: "image", Steps: []string{"upgrade-zones"}, Step: "upgrade-zones", Phase: commonv1.PhaseFailed,
			Attempts: 10, LastError: "no observer to connect to", StartedAt: now}
	})

	out, err := plugin(t, kc, ns, "status")
	if err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	t.Logf("kubectl steward status:\n%s", out)
	mustContain(t, "status", out, "zookeepercluster/zk1", "zookeeper", "True", "obcluster/ob", "oceanbase", "ServersNotServing", "upgrade/upgrade-zones Failed",
		// RUNS: the kinds' own printer columns (not Ready, Operation, Op-Phase,
		// Age: the table has columns for them; not -o wide's RootService).
		"RUNS", "Leader=zk1-1 Members=[1,2,3]", "Active=2",
		"LAST EVENT")
	// LAST EVENT: the newest of each object's, a Warning said so.
	for _, e := range []string{`\d+s ScaledOut`, `Warning \d+s FlowFailed`} {
		if !regexp.MustCompile(e).MatchString(out) {
			t.Errorf("status: no %s in:\n%s", e, out)
		}
	}
	for _, not := range []string{"obzone/", "MemberJoined", "Op-Phase=", "RootService="} {
		if strings.Contains(out, not) {
			t.Errorf("status shows %q:\n%s", not, out)
		}
	}
	out, _ = plugin(t, kc, ns, "status", "--all-kinds", "-o", "wide")
	mustContain(t, "status --all-kinds -o wide", out, "obzone/ob-z1", "zone z1 is INACTIVE", "ScaledOut: 3 servers", "RootService=10.0.0.1:2882")

	// Completion, as kubectl's completion of a plugin runs it
	// (kubectl_complete-steward): types, then names of either form, the
	// rescue verbs, -o.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{"zookeepercluster/", "obcluster/", "obzone/", ":6"}},
		{[]string{"status", "zk/"}, []string{"zk/zk1", ":4"}},
		{[]string{"pause", "obc", ""}, []string{"ob\n", ":4"}},
		{[]string{"rescue", ""}, []string{"retry", "skip", "abort"}},
		{[]string{"rescue", "retry", "obcluster/"}, []string{"obcluster/ob\n"}},
		{[]string{"status", "-o", ""}, []string{"wide", "json", "yaml"}},
	} {
		out, err := plugin(t, kc, ns, append([]string{"__complete"}, tc.args...)...)
		if err != nil {
			t.Errorf("__complete %q: %v", tc.args, err)
		}
		mustContain(t, fmt.Sprintf("__complete %q", tc.args), out, tc.want...)
	}

	out, err = plugin(t, kc, ns, "status", "obc/ob")
	if err != nil {
		t.Fatalf("status obc/ob: %v: %s", err, out)
	}
	t.Logf("kubectl steward status obc/ob:\n%s", out)
	mustContain(t, "status obc/ob", out, "Ready:", "ServersNotServing: zone z1 is INACTIVE", "Step:", "upgrade-zones",
		"Failed attempts:", "no observer to connect to", "kubectl steward rescue retry|skip|abort obcluster/ob", "Events:")

	out, err = plugin(t, kc, ns, "status", "zk", "zk1", "-o", "json")
	var got zkv1.ZookeeperCluster
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Kind != "ZookeeperCluster" || got.Name != "zk1" {
		t.Errorf("status zk zk1 -o json: %v: %s", err, out)
	}

	// Pause and resume: nothing runs the controller here, so neither is
	// confirmed, and the plugin says so.
	if out, err = plugin(t, kc, ns, "pause", "zk/zk1"); err != nil {
		t.Errorf("pause: %v", err)
	}
	mustContain(t, "pause", out, "zookeepercluster/zk1 paused; the controller has not confirmed it")
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(zk), zk); err != nil || !zk.Spec.Paused {
		t.Errorf("after pause: spec.paused %t (%v)", zk.Spec.Paused, err)
	}
	if _, err := plugin(t, kc, ns, "resume", "zk/zk1"); err != nil {
		t.Error(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(zk), zk); err != nil || zk.Spec.Paused {
		t.Errorf("after resume: spec.paused %t (%v)", zk.Spec.Paused, err)
	}

	// Rescue: the "controller" takes the annotation and runs the step.
	go func() {
		time.Sleep(300 * time.Millisecond)
		testenv.Update(t, c, ob, func(o *obv1.OBCluster) { delete(o.Annotations, commonv1.RescueAnnotation) })
		o := &obv1.OBCluster{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(ob), o); err == nil {
			o.Status.Operation.Phase, o.Status.Operation.Attempts = commonv1.PhaseRunning, 0
			_ = c.Status().Update(t.Context(), o)
		}
	}()
	out, err = plugin(t, kc, ns, "--wait", "10s", "rescue", "retry", "obcluster", "ob")
	if err != nil {
		t.Fatalf("rescue: %v: %s", err, out)
	}
	mustContain(t, "rescue", out, "obcluster/ob: retry of the flow upgrade at step upgrade-zones taken")

	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"rescue", "retry", "zk/zk1"}, "has run no flow"},
		{[]string{"rescue", "again", "zk/zk1"}, `want "retry", "skip" or "abort"`},
		{[]string{"status", "pod/x"}, "not a Steward kind"},
		{[]string{"status", "zk/nope"}, "not found"},
		{[]string{"pause", "zk"}, "TYPE/NAME or TYPE NAME"},
	} {
		out, err := plugin(t, kc, ns, bad.args...)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%v: %v (%s), want an error saying %q", bad.args, err, out, bad.says)
		}
	}
	_ = os.Remove(kc)
}
