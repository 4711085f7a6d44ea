package framework

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// statefulSet is a StatefulSet "zk" with a claim template "data" of size
// from class (nil: the default class).
func statefulSet(size string, class *string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "zk"}, Spec: appsv1.StatefulSetSpec{
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}},
	}}
}

// TestCheckVolumeGrowth: a smaller claim template is refused; a larger
// one is refused unless its StorageClass (named, or the default) allows
// expansion; the error names the owner's field through the sources.
func TestCheckVolumeGrowth(t *testing.T) {
	class := func(name string, expands, isDefault bool) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "p", AllowVolumeExpansion: ptr.To(expands)}
		if isDefault {
			sc.Annotations = map[string]string{defaultClassAnnotation: "true"}
		}
		return sc
	}
	sources := map[string]string{"spec.volumeClaimTemplates[0].spec.resources[storage]": "spec.storage.size"}
	for _, tc := range []struct {
		name          string
		classes       []*storagev1.StorageClass
		before, after *appsv1.StatefulSet
		want          string // "" for no error
	}{
		{"unchanged", nil, statefulSet("1Gi", nil), statefulSet("1Gi", nil), ""},
		{"shrunk", nil, statefulSet("2Gi", nil), statefulSet("1Gi", nil), "spec.storage.size: Forbidden: 1Gi is less than 2Gi: a volume can grow, never shrink"},
		{"grown, the default class expands", []*storagev1.StorageClass{class("std", true, true), class("fixed", false, false)},
			statefulSet("1Gi", nil), statefulSet("2Gi", nil), ""},
		{"grown, the default class does not expand", []*storagev1.StorageClass{class("std", false, true)},
			statefulSet("1Gi", nil), statefulSet("2Gi", nil), "cannot grow from 1Gi to 2Gi: StorageClass std does not allow volume expansion"},
		{"grown, no default class", nil, statefulSet("1Gi", nil), statefulSet("2Gi", nil), "the cluster has no default StorageClass"},
		{"grown, the named class expands", []*storagev1.StorageClass{class("std", false, true), class("fast", true, false)},
			statefulSet("1Gi", ptr.To("fast")), statefulSet("1500Mi", ptr.To("fast")), ""},
		{"grown, the named class is missing", nil, statefulSet("1Gi", ptr.To("gone")), statefulSet("2Gi", ptr.To("gone")), `StorageClass gone: storageclasses.storage.k8s.io "gone" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			for _, c := range tc.classes {
				b = b.WithObjects(c)
			}
			errs := checkVolumeGrowth(t.Context(), b.Build(), []RenderedChild{{Object: tc.before, Sources: sources}}, []RenderedChild{{Object: tc.after, Sources: sources}})
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", got, tc.want)
			case tc.want != "" && !strings.HasPrefix(got.Error(), "spec.storage.size: Forbidden"):
				t.Errorf("%v does not name the owner's field spec.storage.size", got)
			}
		})
	}
}

// TestClaimTemplateChanges: growth is told apart by template, a shrink is
// an invalid spec's message, and claims are matched to their template by
// name and ordinal only.
func TestClaimTemplateChanges(t *testing.T) {
	grown := GrownClaimTemplates(statefulSet("1Gi", nil), statefulSet("2Gi", nil))
	if size, ok := grown["data"]; !ok || size.String() != "2Gi" || len(grown) != 1 {
		t.Errorf("grown templates %v, want data 2Gi", grown)
	}
	if g := GrownClaimTemplates(statefulSet("2Gi", nil), statefulSet("1Gi", nil)); len(g) != 0 {
		t.Errorf("a shrink counted as growth: %v", g)
	}
	if err := shrunkClaimTemplates(statefulSet("2Gi", nil), statefulSet("1Gi", nil)); err == nil || !strings.Contains(err.Error(), "asks for 1Gi, less than its volumes' 2Gi") {
		t.Errorf("shrunk: %v", err)
	}
	if err := shrunkClaimTemplates(statefulSet("1Gi", nil), statefulSet("2Gi", nil)); err != nil {
		t.Errorf("growth called a shrink: %v", err)
	}
	for name, want := range map[string]string{"data-zk-0": "data", "data-zk-12": "data", "data-zk-01": "", "data-zk2-0": "", "logs-zk-0": "", "data-zk-": ""} {
		if got := claimTemplateOf(name, "zk", grown); got != want {
			t.Errorf("claim %s: template %q, want %q", name, got, want)
		}
	}
}

// TestGrowVolumesWaitsForFlows runs growVolumes on a fake client: with no
// flow, the set's claims (a departed member's too, not another set's) are
// asked for more, the StatefulSet is deleted for re-creation, an Event
// recorded; while a flow is active, nothing is touched and the
// StatefulSet is applied with its live claim templates; a shrink is an
// invalid spec.
func TestGrowVolumesWaitsForFlows(t *testing.T) {
	pvc := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	}
	run := func(op *commonv1.Operation, desiredSize string) (*Context[*testapi.Widget], *appsv1.StatefulSet, *events.FakeRecorder, error) {
		live := statefulSet("1Gi", nil)
		live.Namespace = "ns"
		c := fake.NewClientBuilder().WithObjects(live, pvc("data-zk-0", "1Gi"), pvc("data-zk-4", "1Gi"), pvc("data-zk2-0", "1Gi")).Build()
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
		w.Status.Operation = op
		rec := events.NewFakeRecorder(10)
		ctx := &Context[*testapi.Widget]{Context: t.Context(), Obj: w, Client: c, Reader: c, Recorder: rec, Log: logr.Discard()}
		desired := statefulSet(desiredSize, nil)
		desired.Namespace = "ns"
		err := ctx.growVolumes(desired)
		return ctx, desired, rec, err
	}
	requests := func(ctx *Context[*testapi.Widget]) string {
		var out []string
		for _, name := range []string{"data-zk-0", "data-zk-4", "data-zk2-0"} {
			p := &corev1.PersistentVolumeClaim{}
			if err := ctx.Client.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, p); err != nil {
				t.Fatal(err)
			}
			out = append(out, name+"="+p.Spec.Resources.Requests.Storage().String())
		}
		return strings.Join(out, " ")
	}
	stsExists := func(ctx *Context[*testapi.Widget]) bool {
		return ctx.Client.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "zk"}, &appsv1.StatefulSet{}) == nil
	}

	ctx, _, rec, err := run(nil, "2Gi")
	if !errors.Is(err, errReplacingStatefulSet) {
		t.Errorf("no flow: %v, want the quiet requeue of a re-creation", err)
	}
	if got := requests(ctx); got != "data-zk-0=2Gi data-zk-4=2Gi data-zk2-0=1Gi" {
		t.Errorf("no flow: claims %s", got)
	}
	if stsExists(ctx) {
		t.Error("no flow: the StatefulSet was not deleted for its re-creation")
	}
	if e := <-rec.Events; !strings.Contains(e, ReasonVolumesGrowing) || !strings.Contains(e, "data-zk-0, data-zk-4") {
		t.Errorf("no flow: Event %q", e)
	}

	ctx, desired, _, err := run(&commonv1.Operation{Name: "scale", Phase: commonv1.PhaseRunning}, "2Gi")
	if err != nil {
		t.Errorf("a flow running: %v", err)
	}
	if got := requests(ctx); got != "data-zk-0=1Gi data-zk-4=1Gi data-zk2-0=1Gi" || !stsExists(ctx) {
		t.Errorf("a flow running: claims %s, StatefulSet kept %t", got, stsExists(ctx))
	}
	if got := desired.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); got != "1Gi" {
		t.Errorf("a flow running: the StatefulSet is applied with claims of %s, want the live 1Gi", got)
	}

	if _, _, _, err := run(nil, "512Mi"); !IsInvalidSpec(err) {
		t.Errorf("a shrink: %v, want an invalid spec", err)
	}
}
