//go:build bench

package scale

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	benchkube "github.com/stewardhq/steward/bench/internal/kube"
)

// auditLog is the API server's audit log, where localkube records every
// request of a workload's service account (the operator's) with its
// answer: what the operator's client metrics count without saying which
// object, it names. $SCALE_AUDIT_LOG overrides localkube's path; without
// the file the benchmark prints the API server's counts only.
func auditLog() string {
	if path := os.Getenv("SCALE_AUDIT_LOG"); path != "" {
		return path
	}
	return filepath.Join(filepath.Dir(benchkube.KubeconfigPath()), "logs", "audit.log")
}

// auditSize is the log's size now: where a phase's requests start.
func auditSize() int64 {
	st, err := os.Stat(auditLog())
	if err != nil {
		return -1
	}
	return st.Size()
}

// auditEvent is what the benchmark reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		APIGroup    string `json:"apiGroup"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	// RequestObject is logged for Events only: their reason names the
	// code that recorded them.
	RequestObject *struct {
		Reason string `json:"reason"`
	} `json:"requestObject"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"responseStatus"`
}

// auditKey groups requests: what was asked, of which resource, and the
// answer.
type auditKey struct {
	verb, resource string
	code           int
	reason         string
}

// auditRow is one group's count, the shapes of the names it touched (a
// cluster's name replaced by <cluster>), and one message, for the errors.
type auditRow struct {
	auditKey
	count   int
	names   map[string]int
	message string
}

// readAudit reads the operator's requests logged between two sizes of the
// log, grouped. ok is false when there is no log, or it was rotated in
// between (localkube keeps 200 MB).
func readAudit(from, to int64, shorts ...string) (rows []auditRow, ok bool) {
	if from < 0 || to < from {
		return nil, false
	}
	f, err := os.Open(auditLog())
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, false
	}
	names := newNamer(shorts...)
	groups := map[auditKey]*auditRow{}
	sc := bufio.NewScanner(io.LimitReader(f, to-from))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef == nil || e.ResponseStatus == nil ||
			!strings.HasPrefix(e.User.Username, "system:serviceaccount:"+benchkube.OperatorNamespace+":") {
			continue
		}
		k := auditKey{verb: e.Verb, resource: e.ObjectRef.Resource, code: e.ResponseStatus.Code, reason: e.ResponseStatus.Reason}
		if strings.Contains(e.RequestURI, "dryRun=All") {
			k.verb += " (dry run)"
		}
		if e.ObjectRef.APIGroup != "" {
			k.resource += "." + e.ObjectRef.APIGroup
		}
		if e.ObjectRef.Subresource != "" {
			k.resource += "/" + e.ObjectRef.Subresource
		}
		row := groups[k]
		if row == nil {
			row = &auditRow{auditKey: k, names: map[string]int{}}
			groups[k] = row
		}
		row.count++
		shape := names.shape(e.ObjectRef.Name)
		if e.RequestObject != nil && e.RequestObject.Reason != "" {
			shape += " (" + e.RequestObject.Reason + ")"
		}
		row.names[shape]++
		if row.message == "" && k.code >= 400 {
			row.message = names.replace(e.ResponseStatus.Message)
		}
	}
	for _, r := range groups {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].count != rows[j].count {
			return rows[i].count > rows[j].count
		}
		return fmt.Sprint(rows[i].auditKey) < fmt.Sprint(rows[j].auditKey)
	})
	return rows, sc.Err() == nil
}

// namer replaces the benchmark's cluster names (zk-17, mo-3) by <cluster>, and
// the random suffix of an Event's name by <id>, so that the requests of a
// thousand clusters group by the shape of the names they touched.
type namer struct{ cluster, event *regexp.Regexp }

func newNamer(shorts ...string) namer {
	quoted := make([]string, len(shorts))
	for i, s := range shorts {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return namer{
		cluster: regexp.MustCompile(`\b(?:` + strings.Join(quoted, "|") + `)-\d+\b`),
		event:   regexp.MustCompile(`\.[0-9a-f]{12,}$`),
	}
}

func (n namer) shape(name string) string {
	if name == "" {
		return "(collection)"
	}
	return n.event.ReplaceAllString(n.replace(name), ".<id>")
}

func (n namer) replace(s string) string { return n.cluster.ReplaceAllString(s, "<cluster>") }

// topNames is the row's n most frequent name shapes, for the table.
func (r auditRow) topNames(n int) string {
	type kv struct {
		name string
		n    int
	}
	var all []kv
	for name, n := range r.names {
		all = append(all, kv{name, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].name < all[j].name })
	var parts []string
	for i, e := range all {
		if i == n {
			parts = append(parts, fmt.Sprintf("+%d more", len(all)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s×%d", e.name, e.n))
	}
	return strings.Join(parts, " ")
}
