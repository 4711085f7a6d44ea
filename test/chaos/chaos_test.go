package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// model is a toy system: a replica count the actions change, and faults
// that pick a pod and a duration.
type model struct {
	replicas int
}

func (m *model) actions() []Action {
	return []Action{
		{Name: "scale-out", Weight: 2, Enabled: func() bool { return m.replicas < 5 }, Run: func(context.Context, *rand.Rand) (string, error) {
			m.replicas += 2
			return fmt.Sprintf("to %d", m.replicas), nil
		}},
		{Name: "scale-in", Weight: 2, Enabled: func() bool { return m.replicas > 1 }, Run: func(context.Context, *rand.Rand) (string, error) {
			m.replicas -= 2
			return fmt.Sprintf("to %d", m.replicas), nil
		}},
		{Name: "kill-pod", Weight: 3, Run: func(_ context.Context, r *rand.Rand) (string, error) {
			// An action that draws a varying count of numbers: later
			// steps must not shift.
			for range r.IntN(4) {
				r.Uint64()
			}
			return fmt.Sprintf("pod %d", r.IntN(m.replicas)), nil
		}},
		{Name: "freeze", Weight: 1, Run: func(_ context.Context, r *rand.Rand) (string, error) {
			return fmt.Sprintf("pod %d for %s", r.IntN(m.replicas), Between(r, time.Second, 10*time.Second).Round(time.Millisecond)), nil
		}},
		{Name: "never", Weight: 0, Run: func(context.Context, *rand.Rand) (string, error) { return "", errors.New("picked") }},
		{Name: "disabled", Weight: 5, Enabled: func() bool { return false }, Run: func(context.Context, *rand.Rand) (string, error) {
			return "", errors.New("picked")
		}},
	}
}

func runModel(t *testing.T, seed uint64, steps int, check func(context.Context) error) ([]Step, error) {
	t.Helper()
	m := &model{replicas: 3}
	rep, err := Run{Seed: seed, Steps: steps, Budget: time.Minute, Actions: m.actions(),
		Settle: func(context.Context) error { return nil }, Check: check, Logf: t.Logf}.Do(t.Context())
	if rep.Seed != seed || rep.Took <= 0 {
		t.Errorf("report %+v", rep)
	}
	return rep.Steps, err
}

// TestSameSeedSameRun checks that a seed replays: the same actions with
// the same choices, whatever each drew; another seed does otherwise, and
// weight 0 or a disabled action is never picked.
func TestSameSeedSameRun(t *testing.T) {
	what := func(steps []Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.Action+" "+s.Did)
		}
		return out
	}
	first, err := runModel(t, 42, 40, nil)
	if err != nil || len(first) != 40 {
		t.Fatalf("%d steps, %v", len(first), err)
	}
	again, _ := runModel(t, 42, 40, nil)
	if !slices.Equal(what(first), what(again)) {
		t.Errorf("seed 42 twice:\n%v\n%v", what(first), what(again))
	}
	other, _ := runModel(t, 43, 40, nil)
	if slices.Equal(what(first), what(other)) {
		t.Errorf("seeds 42 and 43 ran the same steps: %v", what(first))
	}
	seen := map[string]int{}
	for _, s := range first {
		seen[s.Action]++
	}
	if seen["never"]+seen["disabled"] > 0 || seen["kill-pod"] == 0 || seen["scale-out"] == 0 {
		t.Errorf("actions picked: %v", seen)
	}
	if first[0].Index != 1 || first[39].Index != 40 {
		t.Errorf("indexes %d..%d", first[0].Index, first[39].Index)
	}
}

// TestViolationNamesTheSeedAndStep checks that a broken invariant, and a
// system that does not settle, stop the run as a *Violation naming the
// seed and step, with the steps before it reported.
func TestViolationNamesTheSeedAndStep(t *testing.T) {
	calls := 0
	steps, err := runModel(t, 7, 10, func(context.Context) error {
		calls++
		if calls == 3 {
			return errors.New("acknowledged write 17 is missing")
		}
		return nil
	})
	var v *Violation
	if !errors.As(err, &v) || v.Step != 3 || v.Seed != 7 || !strings.Contains(err.Error(), "seed 7, step 3") ||
		!strings.Contains(err.Error(), "write 17 is missing") || len(steps) != 2 {
		t.Errorf("%d steps, %v", len(steps), err)
	}

	m := &model{replicas: 3}
	_, err = Run{Seed: 8, Steps: 5, Budget: time.Minute, Actions: m.actions(),
		Settle: func(context.Context) error { return errors.New("zk not Ready after 5m") }}.Do(t.Context())
	if !errors.As(err, &v) || v.Step != 1 || !strings.Contains(err.Error(), "did not settle: zk not Ready after 5m") {
		t.Errorf("settle: %v", err)
	}
}

// TestRunsAreBounded checks the bounds: no step after the budget, and an
// action that fails or a step with nothing enabled end the run as errors
// that are not violations.
func TestRunsAreBounded(t *testing.T) {
	m := &model{replicas: 3}
	settle := func(context.Context) error { return nil }
	rep, err := Run{Seed: 1, Steps: 5, Budget: 0, Actions: m.actions(), Settle: settle}.Do(t.Context())
	if err != nil || len(rep.Steps) != 0 || !rep.OutOfTime {
		t.Errorf("no budget: %+v, %v", rep, err)
	}
	var v *Violation
	failing := []Action{{Name: "fail", Weight: 1, Run: func(context.Context, *rand.Rand) (string, error) { return "", errors.New("no pod") }}}
	if _, err := (Run{Seed: 1, Steps: 5, Budget: time.Minute, Actions: failing, Settle: settle}).Do(t.Context()); err == nil ||
		errors.As(err, &v) || !strings.Contains(err.Error(), "step 1 (fail): no pod") {
		t.Errorf("a failing action: %v", err)
	}
	if _, err := (Run{Seed: 1, Steps: 5, Budget: time.Minute, Actions: m.actions()[4:], Settle: settle}).Do(t.Context()); !errors.Is(err, ErrNoAction) {
		t.Errorf("nothing enabled: %v", err)
	}
}
