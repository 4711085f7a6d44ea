package matrixone_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/testenv"
)

var (
	_ framework.UpdateValidator[*matrixone.Cluster] = (*matrixone.ClusterController)(nil)
	_ framework.UpdateValidator[*mov1.CNSet]        = (*matrixone.StoreSetController[*mov1.CNSet])(nil)
	_ framework.UpdateValidator[*matrixone.LogSet]  = (*matrixone.LogSetController)(nil)
	_ framework.Warner[*matrixone.Cluster]          = (*matrixone.ClusterController)(nil)
)

const (
	image123 = "localhost/matrixone:1.2.3"
	image124 = "localhost/matrixone:1.2.4"
)

// clusterAt is the cluster "mo" on image whose status says each CN group
// of cnImages was given that image.
func clusterAt(image string, cnImages ...string) *mov1.MatrixOneCluster {
	c := newCluster("ns", "a")
	c.Spec.Image = image
	for i, img := range cnImages {
		c.Status.Sets = append(c.Status.Sets, mov1.SetStatus{Kind: "CNSet", Name: "mo-" + string(rune('a'+i)), Image: img})
	}
	c.Status.Sets = append(c.Status.Sets, mov1.SetStatus{Kind: "LogSet", Name: "mo-log", Image: "localhost/matrixone:9.0.0"})
	return c
}

func TestClusterUpgradeRules(t *testing.T) {
	ctl := matrixone.NewClusterController()
	for _, tc := range []struct {
		name     string
		old      *mov1.MatrixOneCluster
		image    string
		want     string // in the refusal; "" admits
		warnings bool
	}{
		{"an upgrade by a patch release", clusterAt(image123, image123), image124, "", false},
		{"an upgrade to the next release line", clusterAt(image124, image124), "localhost/matrixone:1.3.0", "", false},
		{"an upgrade to the next major's first line", clusterAt("localhost/matrixone:1.9.2", image124), "localhost/matrixone:2.0.1", "", false},
		{"an upgrade from the line before", clusterAt("localhost/matrixone:1.1.0", image123), image124, "", false},
		{"an upgrade that skips a release line", clusterAt("localhost/matrixone:1.1.0", image123), "localhost/matrixone:1.3.0",
			"spec.image: Invalid value: \"localhost/matrixone:1.3.0\": MatrixOne upgrades across one release line at a time " +
				"(its upgrade steps begin at the line before): from 1.1 upgrade to 1.2 first, or to 2.0 if 1.1 is the last 1.x line", false},
		{"an upgrade that skips a major's first line", clusterAt(image124), "localhost/matrixone:2.1.0", "upgrade to 1.3 first", false},
		// A rollback halfway: the log stores went first, no CN group has
		// been given the newer version.
		{"a rollback before any CN group was given the upgrade", clusterAt(image124, image123, image123), image123, "", false},
		{"a rollback once a CN group was given the upgrade", clusterAt(image124, image123, image124), image123,
			"spec.image: Invalid value: \"localhost/matrixone:1.2.3\": must not be older than 1.2.4: CNSet mo-b was given MatrixOne 1.2.4", false},
		{"a downgrade after the upgrade", clusterAt(image124, image124), image123, "a CN older than the catalog refuses to start", false},
		{"an older version than the spec's but not than any CN's", clusterAt("localhost/matrixone:1.2.5", image123), image124, "", false},
		{"a tag that names no version", clusterAt(image124, image124), "localhost/matrixone:latest", "", true},
		{"from a tag that names no version to one older than a CN group's", clusterAt("localhost/matrixone:nightly", image124), image123,
			"must not be older than 1.2.4: CNSet mo-a was given MatrixOne 1.2.4", false},
		{"from a tag that names no version to one no older than the CN groups'", clusterAt("localhost/matrixone:nightly", image123), image124, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.old.DeepCopy()
			obj.Spec.Image = tc.image
			err := ctl.ValidateUpdate(tc.old, obj)
			if got := errString(err); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("ValidateUpdate = %q, want %q", got, tc.want)
			}
			if w := ctl.Warnings(obj); (len(w) > 0) != tc.warnings {
				t.Errorf("Warnings = %q, want some: %v", w, tc.warnings)
			}
		})
	}
}

// Each set, standalone or under a cluster: the upgrade path always, and
// no downgrade but a LogSet's under a MatrixOneCluster.
func TestSetUpgradeRules(t *testing.T) {
	owned := func(obj client.Object) client.Object {
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: mov1.GroupVersion.String(), Kind: "MatrixOneCluster",
			Name: "mo", UID: "u", Controller: new(true)}})
		return obj
	}
	logAt := func(image string) *mov1.LogSet {
		return &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mo-log"},
			Spec: mov1.LogSetSpec{PodSetSpec: mov1.PodSetSpec{Image: image}}}
	}
	cnAt := func(image string) *mov1.CNSet {
		return &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mo-a"},
			Spec: mov1.CNSetSpec{LogSet: "mo-log", PodSetSpec: mov1.PodSetSpec{Image: image}}}
	}
	tnAt := func(image string) *mov1.TNSet {
		return &mov1.TNSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mo-tn"},
			Spec: mov1.TNSetSpec{LogSet: "mo-log", PodSetSpec: mov1.PodSetSpec{Image: image}}}
	}
	logs := matrixone.NewLogSetController(matrixone.Options{})
	cns := matrixone.NewCNSetController(matrixone.Options{})
	tns := matrixone.NewTNSetController(matrixone.Options{})
	for _, tc := range []struct {
		name string
		err  error
		want string // in the refusal; "" admits
	}{
		{"a CNSet upgraded", cns.ValidateUpdate(cnAt(image123), cnAt(image124)), ""},
		{"a CNSet rolled back", cns.ValidateUpdate(cnAt(image124), cnAt(image123)),
			"spec.image: Invalid value: \"localhost/matrixone:1.2.3\": must not be older than 1.2.4: a CNSet never rolls back"},
		{"a CNSet under a cluster rolled back", cns.ValidateUpdate(owned(cnAt(image124)).(*mov1.CNSet), owned(cnAt(image123)).(*mov1.CNSet)),
			"a CNSet never rolls back"},
		{"a CNSet that skips a release line", cns.ValidateUpdate(cnAt(image123), cnAt("localhost/matrixone:1.4.0")), "upgrade to 1.3 first"},
		{"a TNSet rolled back", tns.ValidateUpdate(tnAt(image124), tnAt(image123)), "a TNSet never rolls back"},
		{"a standalone LogSet rolled back", logs.ValidateUpdate(logAt(image124), logAt(image123)), "a LogSet never rolls back"},
		{"a LogSet under a cluster rolled back", logs.ValidateUpdate(owned(logAt(image124)).(*mov1.LogSet), owned(logAt(image123)).(*mov1.LogSet)), ""},
		{"a LogSet under a cluster that skips a release line",
			logs.ValidateUpdate(owned(logAt(image124)).(*mov1.LogSet), owned(logAt("localhost/matrixone:3.0.0")).(*mov1.LogSet)), "upgrade to 1.3 first"},
		{"a CNSet moved to an untagged version", cns.ValidateUpdate(cnAt(image124), cnAt("localhost/matrixone:dev")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(tc.err); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("ValidateUpdate = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUpgradeRulesOnAPIServer: through a real kube-apiserver calling the
// webhooks, a cluster's rollback is admitted until its status says a CN
// group was given the newer version, and refused after with the field
// and the reason; a CNSet never goes back.
func TestUpgradeRulesOnAPIServer(t *testing.T) {
	c := hookServer.WebhookClient(t, newScheme(), matrixone.SetupWebhooks)
	ns := testenv.Namespace(t, c, "mo-upgrade-")
	mc := newCluster(ns, "a")
	mc.Spec.Image = image123
	if err := c.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	setImage := func(image string) error {
		live := cluster(t, c, ns)
		live.Spec.Image = image
		return c.Update(t.Context(), live)
	}
	if err := setImage(image124); err != nil {
		t.Fatalf("the upgrade refused: %v", err)
	}
	if err := setImage(image123); err != nil {
		t.Fatalf("a rollback before any CN group was given the upgrade refused: %v", err)
	}
	if err := setImage(image124); err != nil {
		t.Fatal(err)
	}
	// The cluster's pass gave its CN group the upgrade (played here).
	live := cluster(t, c, ns)
	live.Status.Sets = []mov1.SetStatus{{Kind: "LogSet", Name: "mo-log", Image: image124}, {Kind: "CNSet", Name: "mo-a", Image: image124}}
	if err := c.Status().Update(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	err := setImage(image123)
	requireInvalid(t, err, "spec.image")
	if !strings.Contains(errString(err), "CNSet mo-a was given MatrixOne 1.2.4") {
		t.Errorf("the refusal %q does not say which CN group has the newer version", err)
	}
	requireInvalid(t, setImage("localhost/matrixone:1.4.0"), "spec.image")

	cn := &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lone"},
		Spec: mov1.CNSetSpec{LogSet: "log", PodSetSpec: mov1.PodSetSpec{Image: image124}}}
	if err := c.Create(t.Context(), cn); err != nil {
		t.Fatal(err)
	}
	cn.Spec.Image = image123
	requireInvalid(t, c.Update(t.Context(), cn), "spec.image")
}

// A rollback admitted in the moment before a pass gave a CN group the
// newer version (played here by writing the spec with no webhook): the
// cluster gives no set the older version, and says why.
func TestClusterRefusesToGiveACNGroupAnOlderVersion(t *testing.T) {
	c, ns, _, _ := readyCluster(t, "a")
	if got := get2(t, c, ns, "mo-a", &mov1.CNSet{}).Spec.Image; got != image124 {
		t.Fatalf("the CN group's image %q, want the default %s", got, image124)
	}
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.Image = image123 })
	eventually(t, "the cluster refusing the downgrade", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, mov1.ReasonDowngradeRefused) && strings.Contains(got, "CNSet mo-a keeps "+image124), got
	})
	time.Sleep(time.Second)
	log, cn, tn, proxy := &mov1.LogSet{}, &mov1.CNSet{}, &mov1.TNSet{}, &mov1.ProxySet{}
	get2(t, c, ns, "mo-log", log)
	get2(t, c, ns, "mo-a", cn)
	get2(t, c, ns, "mo-tn", tn)
	get2(t, c, ns, "mo-proxy", proxy)
	for name, img := range map[string]string{"mo-log": log.Spec.Image, "mo-a": cn.Spec.Image, "mo-tn": tn.Spec.Image, "mo-proxy": proxy.Spec.Image} {
		if img != image124 {
			t.Errorf("%s was given %s while the CN group refuses it", name, img)
		}
	}
	if sets := cluster(t, c, ns).Status.Sets; len(sets) == 0 || sets[0].Image != image124 {
		t.Errorf("status.sets %+v, want the LogSet kept at %s", sets, image124)
	}
	// A group added meanwhile is not created: it would start on the
	// older version.
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) {
		mc.Spec.CNGroups = append(mc.Spec.CNGroups, mov1.CNGroupSpec{Name: "b", Replicas: ptr.To[int32](1)})
	})
	eventually(t, "the cluster at its new generation", func() (bool, string) {
		mc := cluster(t, c, ns)
		return mc.Status.ObservedGeneration == mc.Generation, "not yet"
	})
	if get(t, c, ns, "mo-b", &mov1.CNSet{}) {
		t.Error("a CN group added while another refuses a downgrade was created")
	}
	// Back to the version the CNs have, the group removed: the cluster
	// is Ready again.
	editCluster(t, c, ns, func(mc *mov1.MatrixOneCluster) { mc.Spec.Image, mc.Spec.CNGroups = image124, mc.Spec.CNGroups[:1] })
	eventually(t, "the cluster Ready", func() (bool, string) {
		got := condition(cluster(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
}
