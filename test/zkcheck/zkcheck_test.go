package zkcheck

import (
	"strconv"
	"testing"
)

func children(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

func TestParseWhole(t *testing.T) {
	got, err := Parse(Format(children(9057)))
	if err != nil || len(got) != 9057 || !got[1] || !got[9057] {
		t.Fatalf("Parse of a whole output: %d znodes, %v", len(got), err)
	}
	if got, err := Parse(Format(nil)); err != nil || len(got) != 0 {
		t.Fatalf("Parse of no znode: %v, %v", got, err)
	}
}

// TestCutShortSeed20261202 is what chaos seed 20261202 found at step 17: the
// checker pod's log kept 36 KiB of its 45 (znodes 1 to 7594 and the "7"
// of 7595), and the suite took 1463 acknowledged writes to be lost. A cut
// output is an error, never a smaller set.
func TestCutShortSeed20261202(t *testing.T) {
	whole := Format(children(9057))
	for _, cut := range []int{36864, len(whole) - 2, len(whole) - len("END 9057\n"), 0} {
		if got, err := Parse(whole[:cut]); err == nil {
			t.Errorf("Parse of the first %d of %d bytes: %d znodes and no error", cut, len(whole), len(got))
		}
	}
	// A count that does not match what precedes it.
	if _, err := Parse("1\n2\nEND 3\n"); err == nil {
		t.Error("Parse of END 3 after 2 znodes: no error")
	}
}
