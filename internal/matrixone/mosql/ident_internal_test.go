package mosql

import "testing"

// Names go into snapshot statements quoted, never interpolated raw.
func TestIdentQuotesOnlyNamesMatrixOneTakes(t *testing.T) {
	for name, want := range map[string]string{
		"snap1": "`snap1`", "acc-1_x.y": "`acc-1_x.y`", "Acc": "`Acc`",
		"": "", "a`b": "", "a b": "", "a'b": "", `a"b`: "", "a;drop": "",
	} {
		got, err := ident(name)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ident(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
}
