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
