package zkcheck

import (
	"fmt"
	"strconv"
	"strings"
)

// Format is the checker's output for the children, sorted.
func Format(children []string) string {
	var b strings.Builder
	for _, c := range children {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "END %d\n", len(children))
	return b.String()
}

// Parse reads an output of Format: the set of znode numbers, or an error
// when the closing count is missing or does not match (the output was cut
// short).
func Parse(out string) (map[int]bool, error) {
	stored := map[int]bool{}
	seen := 0
	lines := strings.Fields(out)
	for i, line := range lines {
		if line == "END" && i+1 < len(lines) {
			if n, err := strconv.Atoi(lines[i+1]); err != nil || n != seen {
				return nil, fmt.Errorf("it says END %s after %d znodes", lines[i+1], seen)
			}
			return stored, nil
		}
		seen++
		if n, err := strconv.Atoi(line); err == nil {
			stored[n] = true
		}
	}
	return nil, fmt.Errorf("no END after %d znodes (%d bytes): the output was cut short", seen, len(out))
}
