package framework_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
	"github.com/stewardhq/steward/internal/testenv"
)

// TestEventsWithDifferentNotesAreKept records, in one pass, two Events of
// one reason with different notes and one note twice: both notes are
// Events of their own (client-go's series would otherwise merge them into
// the first, "x2"), and the repeated note is one Event counted twice.
func TestEventsWithDifferentNotesAreKept(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.Flows = append(opts.Flows, framework.Flow[*testapi.Widget, *declaration]{
		Name: "announce",
		Steps: []framework.Step[*testapi.Widget, *declaration]{{Name: "add", Run: func(c *Ctx, _ *declaration) (bool, error) {
			c.Event(corev1.EventTypeNormal, "MemberAdded", "Added member %s", "m-1")
			c.Event(corev1.EventTypeNormal, "MemberAdded", "Added member %s", "m-2")
			c.Event(corev1.EventTypeNormal, "MemberSeen", "Saw member %s", "m-3")
			c.Event(corev1.EventTypeNormal, "MemberSeen", "Saw member %s", "m-3")
			return true, nil
		}}},
	})
	startManager(t, cfg, ns, opts)

	create(t, c, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"},
		Spec: testapi.WidgetSpec{Replicas: 1, Flow: "announce", FlowToken: "1"}})
	testenv.Eventually(t, "an Event for each member added", func() (bool, string) {
		var notes []string
		for _, e := range eventsOf(t, c, ns, "MemberAdded") {
			notes = append(notes, e.Note)
		}
		return strings.Contains(strings.Join(notes, "|"), "Added member m-1") &&
			strings.Contains(strings.Join(notes, "|"), "Added member m-2"), fmt.Sprintf("notes %q", notes)
	})
	testenv.Eventually(t, "the repeated note counted in one Event", func() (bool, string) {
		seen := eventsOf(t, c, ns, "MemberSeen")
		if len(seen) != 1 || seen[0].Series == nil || seen[0].Series.Count != 2 {
			return false, fmt.Sprintf("Events %+v", seen)
		}
		return true, ""
	})
}
