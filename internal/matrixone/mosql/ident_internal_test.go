package mosql

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

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

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err                error
		refused, transient bool
	}{
		{&mysql.MySQLError{Number: 20702, Message: "lock table bind changed"}, true, true},
		{fmt.Errorf("restore: %w", &mysql.MySQLError{Number: 20101, Message: "internal error: snapshot s does not exist"}), true, false},
		{mysql.ErrInvalidConn, false, false},
		{context.DeadlineExceeded, false, false},
	} {
		refused, transient := Refused(tc.err)
		if refused != tc.refused || transient != tc.transient {
			t.Errorf("Refused(%v) = %t, %t; want %t, %t", tc.err, refused, transient, tc.refused, tc.transient)
		}
	}
}
