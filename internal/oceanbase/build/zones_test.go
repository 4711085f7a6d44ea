package build

import "testing"

func TestLocalityWithAndWithout(t *testing.T) {
	for _, tc := range []struct {
		locality, zone, with, without string
	}{
		{"FULL{1}@z1, FULL{1}@z2, FULL{1}@z3", "z4",
			"FULL{1}@z1, FULL{1}@z2, FULL{1}@z3, FULL{1}@z4", "FULL{1}@z1, FULL{1}@z2, FULL{1}@z3"},
		{"FULL{1}@z1, FULL{1}@z2, FULL{1}@z3", "z2",
			"FULL{1}@z1, FULL{1}@z2, FULL{1}@z3", "FULL{1}@z1, FULL{1}@z3"},
		// Other replica types are kept as written; spacing is OceanBase's.
		{"FULL{1}@z1,READONLY{1}@z2", "z3", "FULL{1}@z1, READONLY{1}@z2, FULL{1}@z3", "FULL{1}@z1, READONLY{1}@z2"},
		{"FULL{1}@z1,READONLY{1}@z2", "z2", "FULL{1}@z1, READONLY{1}@z2", "FULL{1}@z1"},
		// A zone that is a prefix of another is not that zone.
		{"FULL{1}@z1, FULL{1}@z10", "z1", "FULL{1}@z1, FULL{1}@z10", "FULL{1}@z10"},
		{"FULL{1}@z1", "z1", "FULL{1}@z1", ""},
		{"", "z1", "FULL{1}@z1", ""},
	} {
		if got := LocalityWith(tc.locality, tc.zone); got != tc.with {
			t.Errorf("LocalityWith(%q, %q) = %q, want %q", tc.locality, tc.zone, got, tc.with)
		}
		if got := LocalityWithout(tc.locality, tc.zone); got != tc.without {
			t.Errorf("LocalityWithout(%q, %q) = %q, want %q", tc.locality, tc.zone, got, tc.without)
		}
	}
}
