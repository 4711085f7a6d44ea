package framework

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
