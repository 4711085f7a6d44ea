package framework

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"

	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
)

// countingActor observes a count, with no Declare to provide it.
type countingActor struct{}

func (countingActor) Observe(*Context[*testapi.Widget], int) (Action[*testapi.Widget], error) {
	return nil, nil
}
func (countingActor) Finalize(*Context[*testapi.Widget]) (bool, error) { return true, nil }

// declaringActor observes the count its Declare returns.
type declaringActor struct{ countingActor }

func (declaringActor) Declare(*Context[*testapi.Widget]) (int, error) { return 1, nil }

// driftedDeclarer's Declare returns another type than Observe takes.
type driftedDeclarer struct{ countingActor }

func (driftedDeclarer) Declare(*Context[*testapi.Widget]) (string, error) { return "", nil }

// driftedInterrupter's InterruptFlow lacks the observation.
type driftedInterrupter struct{ declaringActor }

func (driftedInterrupter) InterruptFlow(*Context[*testapi.Widget], *commonv1.Operation) (string, bool) {
	return "", false
}

// driftedValidator's Validate takes the object by value.
type driftedValidator struct{ noopActor }

func (driftedValidator) Validate(testapi.Widget) error { return nil }

// emptyDeclarer declares children and observes nothing.
type emptyDeclarer struct{ noopActor }

func (emptyDeclarer) Declare(*Context[*testapi.Widget]) (Nothing, error) { return Nothing{}, nil }

// TestNewRequiresDeclare checks that New refuses an actor that observes
// something no Declare of its provides, or has a hook's method of another
// signature than the hook's (it would never be called), and accepts the
// others.
func TestNewRequiresDeclare(t *testing.T) {
	// The manager never starts: New contacts no API server.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: webhookScheme, Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		new     func() error
		wantErr bool
	}{
		{"no Declare, observes Nothing", func() error {
			_, err := New(mgr, Options[*testapi.Widget, Nothing]{Actor: noopActor{}})
			return err
		}, false},
		{"Declare observing Nothing", func() error {
			_, err := New(mgr, Options[*testapi.Widget, Nothing]{Actor: emptyDeclarer{}})
			return err
		}, false},
		{"Declare returning what Observe takes", func() error {
			_, err := New(mgr, Options[*testapi.Widget, int]{Actor: declaringActor{}})
			return err
		}, false},
		{"no Declare, observes an int", func() error {
			_, err := New(mgr, Options[*testapi.Widget, int]{Actor: countingActor{}})
			return err
		}, true},
		{"a Declare returning another type", func() error {
			_, err := New(mgr, Options[*testapi.Widget, int]{Actor: driftedDeclarer{}})
			return err
		}, true},
		{"an InterruptFlow of another signature", func() error {
			_, err := New(mgr, Options[*testapi.Widget, int]{Actor: driftedInterrupter{}})
			return err
		}, true},
		{"a Validate of another signature", func() error {
			_, err := New(mgr, Options[*testapi.Widget, Nothing]{Actor: driftedValidator{}})
			return err
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.new(); (err != nil) != tc.wantErr {
				t.Errorf("New: error %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}

func TestOlder(t *testing.T) {
	at := func(name string, sec int64) *testapi.Widget {
		w := &testapi.Widget{}
		w.Name = name
		if sec > 0 {
			w.CreationTimestamp = metav1.Unix(sec, 0)
		}
		return w
	}
	for _, tc := range []struct {
		a, b *testapi.Widget
		want bool
	}{
		{at("b", 10), at("a", 20), true},
		{at("a", 20), at("b", 10), false},
		{at("b", 10), at("a", 10), false}, // same second: by name
		{at("a", 10), at("b", 10), true},
		{at("z", 10), at("a", 0), true}, // b not created yet: the newest
	} {
		if got := Older(tc.a, tc.b); got != tc.want {
			t.Errorf("Older(%s@%v, %s@%v) = %v, want %v", tc.a.Name, tc.a.CreationTimestamp, tc.b.Name, tc.b.CreationTimestamp, got, tc.want)
		}
	}
}
