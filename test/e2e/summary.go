//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/internal/framework"
)

// failureNotes are what a failed run prints last, after the cluster went
// down: CI keeps only the end of a failed run's output, where the tree of
// test results comes, and a failure's own message and dump are hundreds
// of lines above it. A note is one line: the test, and why it failed or
// what its Steward objects said when it did.
var failureNotes struct {
	sync.Mutex
	lines []string
}

// maxNoteLength bounds one note: a condition message or a kubectl error
// can be long, and the notes are read on a screen.
const maxNoteLength = 400

// noteFailure records a line for the run's failure summary.
func noteFailure(t *testing.T, format string, args ...any) {
	line := t.Name() + ": " + strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	if len(line) > maxNoteLength {
		line = framework.Shorten(line, maxNoteLength) + "…"
	}
	failureNotes.Lock()
	defer failureNotes.Unlock()
	failureNotes.lines = append(failureNotes.lines, line)
}

// noteObjects records, for the failure summary, what each Steward object
// in ns says (its Ready condition and its operation), how each restarted
// container last ended (OOMKilled, say) and the namespace's last Warning
// events.
func noteObjects(t *testing.T, ns string) {
	const objects = `{range .items[*]}{.kind}/{.metadata.name}: Ready={.status.conditions[?(@.type=="Ready")].status} ` +
		`{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}; ` +
		`operation {.status.operation.name} {.status.operation.step} {.status.operation.phase}: {.status.operation.message}{"\n"}{end}`
	out, err := kubectl("get", "steward", "-n", ns, "-o", "jsonpath="+objects)
	if err != nil {
		noteFailure(t, "kubectl get steward: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			noteFailure(t, "%s", line)
		}
	}
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		noteFailure(t, "list pods: %v", err)
	}
	for _, pod := range pods.Items {
		for _, cs := range pod.Status.ContainerStatuses {
			if last := cs.LastTerminationState.Terminated; last != nil {
				noteFailure(t, "Pod/%s container %s restarted %d times, last ended %s: %s (exit %d) %s",
					pod.Name, cs.Name, cs.RestartCount, last.FinishedAt.UTC().Format(time.RFC3339), last.Reason, last.ExitCode, last.Message)
			}
		}
	}
	const events = `{range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.reason}: {.message}{"\n"}{end}`
	out, _ = kubectl("get", "events", "-n", ns, "--field-selector", "type=Warning", "--sort-by=.lastTimestamp", "-o", "jsonpath="+events)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, line := range lines[max(0, len(lines)-5):] {
		if line != "" {
			noteFailure(t, "Warning %s", line)
		}
	}
}

// printFailureNotes writes the failure summary, if any note was taken.
func printFailureNotes(w io.Writer) {
	failureNotes.Lock()
	defer failureNotes.Unlock()
	if len(failureNotes.lines) == 0 {
		return
	}
	fmt.Fprintln(w, "=== Failure summary (each failure's full output and dump are above)")
	for _, line := range failureNotes.lines {
		fmt.Fprintln(w, "    "+line)
	}
}

// errorf is t.Errorf whose message also goes to the failure summary: for
// the failures that are not a wait's timeout (eventually notes those).
func errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	noteFailure(t, format, args...)
	t.Errorf(format, args...)
}

// fatalf is t.Fatalf whose message also goes to the failure summary.
func fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	noteFailure(t, format, args...)
	t.Fatalf(format, args...)
}

// fatalNow is t.Fatal whose message also goes to the failure summary.
func fatalNow(t *testing.T, args ...any) {
	t.Helper()
	noteFailure(t, "%s", fmt.Sprint(args...))
	t.Fatal(args...)
}
