package framework_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stewardhq/steward/internal/framework"
)

func TestBackground(t *testing.T) {
	b := framework.NewBackground()
	uid := types.UID("a")
	if state, _ := b.Poll(uid); state != framework.RunNone {
		t.Fatalf("before a start: %v, want RunNone", state)
	}
	release := make(chan struct{})
	failed := errors.New("refused")
	b.Start(uid, time.Minute, func(context.Context) error { <-release; return failed })
	if state, _ := b.Poll(uid); state != framework.RunRunning {
		t.Fatalf("while the call runs: %v, want RunRunning", state)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, err := b.Poll(uid)
		if state == framework.RunFinished {
			if !errors.Is(err, failed) {
				t.Errorf("the finished run's error %v, want %v", err, failed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if state, _ := b.Poll(uid); state != framework.RunNone {
		t.Errorf("after its outcome was taken: %v, want RunNone", state)
	}
	// The call's context ends after the timeout.
	timedOut := types.UID("b")
	b.Start(timedOut, 10*time.Millisecond, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	state, err := b.Poll(timedOut)
	for ; state != framework.RunFinished; state, err = b.Poll(timedOut) {
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call past its timeout ended with %v", err)
	}
}
