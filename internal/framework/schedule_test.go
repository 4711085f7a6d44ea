package framework_test

import (
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/framework"
)

func TestDueRun(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	hourly, err := framework.ParseSchedule("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		last, now       string
		wantDue, wantNx string
	}{
		{"nothing due yet", "2026-01-01T10:00:00Z", "2026-01-01T10:59:59Z", "", "2026-01-01T11:00:00Z"},
		{"one due", "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"},
		{"missed runs: only the latest", "2026-01-01T10:00:00Z", "2026-01-01T13:30:00Z", "2026-01-01T13:00:00Z", "2026-01-01T14:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, next := framework.DueRun(hourly, at(tc.last), at(tc.now))
			if tc.wantDue == "" && !due.IsZero() || tc.wantDue != "" && !due.Equal(at(tc.wantDue)) {
				t.Errorf("due %v, want %q", due, tc.wantDue)
			}
			if !next.Equal(at(tc.wantNx)) {
				t.Errorf("next %v, want %s", next, tc.wantNx)
			}
		})
	}
	if _, err := framework.ParseSchedule("61 * * * *"); err == nil {
		t.Error("a minute of 61 parsed")
	}
}
