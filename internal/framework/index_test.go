package framework_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// listRecorder is a reader that records the options of its last List.
type listRecorder struct {
	client.Reader
	got client.ListOptions
}

func (r *listRecorder) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	r.got = *(&client.ListOptions{}).ApplyOptions(opts)
	return nil
}

// TestIndexedReader checks which Lists read through the instance index:
// those of an indexed kind whose labels name one instance, and no other.
func TestIndexedReader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	one := client.MatchingLabels{standard.LabelInstance: "zk", standard.LabelComponent: "server"}
	byIndex := fields.OneTermEqualSelector(framework.InstanceIndex, "zk").String()
	tests := []struct {
		name string
		list client.ObjectList
		opts []client.ListOption
		want string // the field selector the cache is asked for
	}{
		{"pods of one instance", &corev1.PodList{}, []client.ListOption{client.InNamespace("ns"), one}, byIndex},
		{"claims of one instance", &corev1.PersistentVolumeClaimList{}, []client.ListOption{client.InNamespace("ns"), one}, byIndex},
		{"sets of one instance", &appsv1.StatefulSetList{}, []client.ListOption{one}, byIndex},
		{"no instance named", &corev1.PodList{}, []client.ListOption{client.MatchingLabels{standard.LabelComponent: "server"}}, ""},
		{"no labels", &corev1.PodList{}, []client.ListOption{client.InNamespace("ns")}, ""},
		{"a kind not indexed", &corev1.EndpointsList{}, []client.ListOption{one}, ""},
		{"a field selector already", &corev1.PodList{}, []client.ListOption{one, client.MatchingFields{"spec.nodeName": "n"}}, "spec.nodeName=n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &listRecorder{}
			r, err := framework.IndexedReader(rec, scheme)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.List(t.Context(), tt.list, tt.opts...); err != nil {
				t.Fatal(err)
			}
			got := ""
			if rec.got.FieldSelector != nil {
				got = rec.got.FieldSelector.String()
			}
			if got != tt.want {
				t.Errorf("field selector = %q, want %q", got, tt.want)
			}
			want := (&client.ListOptions{}).ApplyOptions(tt.opts)
			if rec.got.Namespace != want.Namespace || selectorText(rec.got.LabelSelector) != selectorText(want.LabelSelector) {
				t.Errorf("namespace %q, labels %v: want %q, %v kept", rec.got.Namespace, rec.got.LabelSelector, want.Namespace, want.LabelSelector)
			}
		})
	}
}

func selectorText(s labels.Selector) string {
	if s == nil {
		return ""
	}
	return s.String()
}
