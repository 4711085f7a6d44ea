//go:build e2e

package e2e

import (
	"sync"
	"time"
)

// rowWriter is a client that inserts rows numbered 1, 2, 3, … one after
// another, a pause apart, until stopped, recording when each insert was
// sent and whether it was acknowledged: an acknowledged row must be
// stored; one whose answer was lost may or may not be.
type rowWriter struct {
	mu     sync.Mutex
	rows   []rowWrite
	done   chan struct{}
	exited chan struct{}
}

type rowWrite struct {
	id           int
	sent, acked  time.Time
	acknowledged bool
}

// startRowWriter starts a writer that calls insert with each row's id.
func startRowWriter(pause time.Duration, insert func(id int) error) *rowWriter {
	w := &rowWriter{done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		for id := 1; ; id++ {
			select {
			case <-w.done:
				return
			case <-time.After(pause):
			}
			sent := time.Now()
			err := insert(id)
			w.mu.Lock()
			w.rows = append(w.rows, rowWrite{id: id, sent: sent, acked: time.Now(), acknowledged: err == nil})
			w.mu.Unlock()
		}
	}()
	return w
}

// acked returns the ids acknowledged so far.
func (w *rowWriter) acked() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int
	for _, r := range w.rows {
		if r.acknowledged {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// gap waits for two acknowledged writes in a row, and returns the ids
// acknowledged up to the first, those whose answer was lost before it,
// and a time between the first's acknowledgement and the second's
// sending: the rows committed before that time.
func (w *rowWriter) gap() (acked, maybe []int, point time.Time) {
	for {
		w.mu.Lock()
		n := len(w.rows)
		if n >= 2 && w.rows[n-1].acknowledged && w.rows[n-2].acknowledged {
			first, second := w.rows[n-2], w.rows[n-1]
			for _, r := range w.rows[:n-1] {
				if r.acknowledged {
					acked = append(acked, r.id)
				} else {
					maybe = append(maybe, r.id)
				}
			}
			w.mu.Unlock()
			return acked, maybe, first.acked.Add(second.sent.Sub(first.acked) / 2)
		}
		w.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

// lost returns the ids whose insert's answer was lost.
func (w *rowWriter) lost() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int
	for _, r := range w.rows {
		if !r.acknowledged {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// stop stops the writer (once).
func (w *rowWriter) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	<-w.exited
}
