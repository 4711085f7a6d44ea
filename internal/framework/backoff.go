package framework

import "time"

// Backoff is an exponential backoff between Initial and Max.
type Backoff struct {
	// Initial is the first delay.
	Initial time.Duration
	// Max caps the delay.
	Max time.Duration
}

// Step returns the delay before attempt n+1 after n failed attempts:
// Initial doubled n-1 times, capped at Max. It returns Initial for n <= 1.
func (b Backoff) Step(n int32) time.Duration {
	d := b.Initial
	for i := int32(1); i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Since returns the delay before checking again on something that has been
// waited for since elapsed ago: elapsed itself, clamped to [Initial, Max].
// Requeueing after the elapsed time doubles the total wait at each check, an
// exponential backoff that needs no counter in status.
func (b Backoff) Since(elapsed time.Duration) time.Duration {
	return min(max(elapsed, b.Initial), b.Max)
}

// withDefaults fills the zero fields of b from d.
func (b Backoff) withDefaults(d Backoff) Backoff {
	if b.Initial <= 0 {
		b.Initial = d.Initial
	}
	if b.Max <= 0 {
		b.Max = d.Max
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	return b
}
