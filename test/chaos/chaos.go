package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Action is one thing a run may do to the system under test.
type Action struct {
	// Name identifies the action in the log and the report.
	Name string
	// Weight is how often the action is picked against the others
	// enabled at that step; 0 never picks it.
	Weight int
	// Enabled says whether the action may run at this step; nil always.
	// It must read the state the actions keep, not the cluster's, so
	// that a seed replays the same actions.
	Enabled func() bool
	// Run does the action, making its choices (which pod, how long) with
	// r, a source of its own for this step, and says what it did.
	// An error stops the run: the action could not be done.
	Run func(ctx context.Context, r *rand.Rand) (string, error)
}

// Run is one randomized run.
type Run struct {
	// Seed picks the actions and their choices; the same seed picks the
	// same ones.
	Seed uint64
	// Steps is how many actions the run does at most.
	Steps int
	// Budget bounds the run's time: no action starts after it.
	Budget time.Duration
	// Actions are what the run picks from.
	Actions []Action
	// Settle waits, after an action, until the system has converged
	// (every object Ready at its generation, no flow running); an error
	// is a violation: the operator wedged or the system did not heal.
	Settle func(ctx context.Context) error
	// Check checks the invariants once the system settled; an error is a
	// violation. nil checks nothing.
	Check func(ctx context.Context) error
	// Logf reports each step.
	Logf func(format string, args ...any)
}

// Step is one action a run did.
type Step struct {
	// Index counts from 1.
	Index int
	// Action is the action's name.
	Action string
	// Did is what the action said it did.
	Did string
	// Settled is how long the system took to settle after it.
	Settled time.Duration
}

// Report is what a run did.
type Report struct {
	Seed  uint64
	Steps []Step
	// Took is the run's time.
	Took time.Duration
	// OutOfTime is set when the budget ended the run before its steps.
	OutOfTime bool
}

// Violation is an invariant a run found broken, or a system that did not
// settle: it names the seed that replays it and the step.
type Violation struct {
	Seed   uint64
	Step   int
	Action string
	Err    error
}

func (v *Violation) Error() string {
	return fmt.Sprintf("seed %d, step %d (%s): %v", v.Seed, v.Step, v.Action, v.Err)
}

func (v *Violation) Unwrap() error { return v.Err }

// ErrNoAction is returned when no action is enabled at a step.
var ErrNoAction = errors.New("no action is enabled")

// Do runs r: up to r.Steps actions, each followed by Settle and Check,
// until the budget or ctx ends. A broken invariant or a system that does
// not settle is a *Violation; an action that cannot be done, or a step at
// which none is enabled, is another error. The report holds the steps done
// either way.
func (r Run) Do(ctx context.Context) (rep Report, err error) {
	start := time.Now()
	rep.Seed = r.Seed
	defer func() { rep.Took = time.Since(start) }()
	choose := rand.New(rand.NewPCG(r.Seed, 0))
	logf := r.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("Chaos run: seed %d, at most %d steps in %s (replay: the same seed)", r.Seed, r.Steps, r.Budget)
	for i := 1; i <= r.Steps; i++ {
		if time.Since(start) > r.Budget {
			rep.OutOfTime = true
			break
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		a, err := pick(choose, r.Actions)
		if err != nil {
			return rep, fmt.Errorf("seed %d, step %d: %w", r.Seed, i, err)
		}
		// Each step's choices come from a source of its own, so that an
		// action drawing more or fewer numbers changes no later step.
		did, err := a.Run(ctx, rand.New(rand.NewPCG(r.Seed, uint64(i))))
		if err != nil {
			return rep, fmt.Errorf("seed %d, step %d (%s): %w", r.Seed, i, a.Name, err)
		}
		logf("Step %d: %s: %s", i, a.Name, did)
		settleStart := time.Now()
		if err := r.Settle(ctx); err != nil {
			return rep, &Violation{Seed: r.Seed, Step: i, Action: a.Name, Err: fmt.Errorf("did not settle: %w", err)}
		}
		step := Step{Index: i, Action: a.Name, Did: did, Settled: time.Since(settleStart)}
		if r.Check != nil {
			if err := r.Check(ctx); err != nil {
				return rep, &Violation{Seed: r.Seed, Step: i, Action: a.Name, Err: err}
			}
		}
		rep.Steps = append(rep.Steps, step)
		logf("Step %d settled after %s, invariants hold", i, step.Settled.Round(time.Second))
	}
	return rep, nil
}

// pick chooses one enabled action, by weight.
func pick(r *rand.Rand, actions []Action) (Action, error) {
	total := 0
	var enabled []Action
	for _, a := range actions {
		if a.Weight > 0 && (a.Enabled == nil || a.Enabled()) {
			enabled = append(enabled, a)
			total += a.Weight
		}
	}
	if total == 0 {
		return Action{}, ErrNoAction
	}
	n := r.IntN(total)
	for _, a := range enabled {
		if n < a.Weight {
			return a, nil
		}
		n -= a.Weight
	}
	panic("unreachable")
}

// Between is a duration in [lo, hi), drawn from r: how long a fault
// lasts.
func Between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// OneOf is one of items, drawn from r.
func OneOf[T any](r *rand.Rand, items ...T) T { return items[r.IntN(len(items))] }
