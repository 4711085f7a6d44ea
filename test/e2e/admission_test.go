//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
)

// admissionInterval is the pace of the admission load: each tick sends one
// request, a create and a patch in turn.
const admissionInterval = 100 * time.Millisecond

// admissionLoad is a client that, until stopped, creates ZookeeperClusters
// (server-side dry runs, so no pods start) and patches an annotation of
// target, alternately, every admissionInterval, each through the webhooks,
// and records every request the API server did not admit. It is how a user
// meets an outage of admission: an apply that fails.
type admissionLoad struct {
	c      client.Client
	target client.ObjectKey
	stop   context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	sent     int
	refused  []string // the first errors, with when they came
	refusals int
	started  time.Time
}

// startAdmissionLoad starts the load on target, a ZookeeperCluster.
func startAdmissionLoad(c client.Client, target client.ObjectKey) *admissionLoad {
	ctx, stop := context.WithCancel(context.Background())
	l := &admissionLoad{c: c, target: target, stop: stop, done: make(chan struct{}), started: time.Now()}
	go l.run(ctx)
	return l
}

func (l *admissionLoad) run(ctx context.Context) {
	defer close(l.done)
	tick := time.NewTicker(admissionInterval)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var err error
		if n%2 == 0 {
			err = l.create(ctx, n)
		} else {
			err = l.patch(ctx, n)
		}
		l.record(ctx, err)
	}
}

// create dry-runs the creation of a small ZookeeperCluster.
func (l *admissionLoad) create(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	zk := &zkv1.ZookeeperCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.target.Namespace, Name: fmt.Sprintf("admission-%d", n)},
		Spec:       zkv1.ZookeeperClusterSpec{Replicas: 1, Heap: "64m"},
	}
	return l.c.Create(ctx, zk, client.DryRunAll)
}

// patch sets the annotation e2e.steward.dev/admission-load on the target.
func (l *admissionLoad) patch(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	zk := &zkv1.ZookeeperCluster{ObjectMeta: metav1.ObjectMeta{Namespace: l.target.Namespace, Name: l.target.Name}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.steward.dev/admission-load":%q}}}`, strconv.Itoa(n))
	return l.c.Patch(ctx, zk, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

func (l *admissionLoad) record(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // stopped mid-request: not the API server's answer
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	if err == nil || apierrors.IsConflict(err) {
		return
	}
	l.refusals++
	if len(l.refused) < 5 {
		l.refused = append(l.refused, fmt.Sprintf("after %s: %v", time.Since(l.started).Round(100*time.Millisecond), err))
	}
}

// finish stops the load and returns how many requests it sent and how
// many were refused, with the first refusals.
func (l *admissionLoad) finish() (sent, refusals int, first []string) {
	l.stop()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent, l.refusals, l.refused
}

// expectAllAdmitted stops the load and fails the test unless it sent
// requests throughout and every one was admitted.
func (l *admissionLoad) expectAllAdmitted(t *testing.T, during string) {
	t.Helper()
	sent, refusals, first := l.finish()
	t.Logf("Admission during %s: %d requests over %s, %d refused", during, sent, time.Since(l.started).Round(time.Second), refusals)
	if refusals > 0 {
		errorf(t, "%d of %d admission requests were refused during %s; the first: %v", refusals, sent, during, first)
	}
	if least := int(time.Since(l.started)/admissionInterval) / 4; sent < least {
		errorf(t, "the load sent %d requests during %s, want at least %d: it did not run throughout", sent, during, least)
	}
}
