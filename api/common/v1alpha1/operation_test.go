package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseRescue(t *testing.T) {
	tests := []struct {
		in      string
		want    Rescue
		wantErr bool
	}{
		{"retry", RescueRetry, false},
		{" Skip ", RescueSkip, false},
		{"ABORT", RescueAbort, false},
		{"", "", true},
		{"restart", "", true},
	}
	for _, tt := range tests {
		got, err := ParseRescue(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseRescue(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestOperationProgress(t *testing.T) {
	op := NewOperation("upgrade", "g3", []string{"drain", "restart"}, metav1.Now())
	if op.Step != "drain" || op.Progress != "1/2" || op.Phase != PhaseRunning || !op.Phase.Active() {
		t.Fatalf("new operation = %+v", op)
	}
	op.Attempts, op.LastError = 2, "boom"
	op.SetCurrent(1, metav1.Now())
	if op.Step != "restart" || op.Progress != "2/2" || op.Attempts != 0 || op.LastError != "" || op.StepStartedAt == nil {
		t.Fatalf("after step 1 = %+v", op)
	}
	op.SetCurrent(2, metav1.Now())
	op.Finish(PhaseSucceeded, metav1.Now())
	if op.Step != "" || op.Progress != "2/2" || op.Phase.Active() || op.FinishedAt == nil || op.StepStartedAt != nil {
		t.Fatalf("finished operation = %+v", op)
	}
	for p, active := range map[Phase]bool{PhaseRunning: true, PhaseFailed: true, PhaseSucceeded: false, PhaseAborted: false} {
		if p.Active() != active {
			t.Errorf("%s.Active() = %v", p, !active)
		}
	}
}

func TestOperationHold(t *testing.T) {
	var none *Operation
	if _, ok := none.HeldReplicas("zk"); ok {
		t.Error("a nil operation holds zk")
	}
	op := NewOperation("scale-in", "g2", []string{"drain", "release"}, metav1.Now())
	if _, ok := op.HeldReplicas("zk"); ok {
		t.Error("a new operation holds zk")
	}
	op.Hold("zk", 5)
	op.Hold("other", 1)
	op.Hold("zk", 3)
	if got, ok := op.HeldReplicas("zk"); !ok || got != 3 || len(op.Held) != 2 {
		t.Errorf("HeldReplicas(zk) = %d, %t with %v; want 3, true, two entries", got, ok, op.Held)
	}
	op.Finish(PhaseFailed, metav1.Now())
	if got, ok := op.HeldReplicas("zk"); !ok || got != 3 {
		t.Errorf("a failed operation: HeldReplicas(zk) = %d, %t; want 3, true (it waits for a rescue)", got, ok)
	}
	op.Finish(PhaseAborted, metav1.Now())
	if _, ok := op.HeldReplicas("zk"); ok {
		t.Error("an aborted operation still holds zk")
	}
}
