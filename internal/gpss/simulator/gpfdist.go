package simulator

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
)

// serveGpfdist answers a Greenplum segment's request for a job's data, as
// gpfdist does: GET /<job name or id> with X-GP-PROTO. It serves only the
// jobs this instance runs (a segment asking another instance gets 404, as
// an external table pointing at the wrong instance would) and, having no
// data source, ends every stream at once. Every answer, refusals too, says
// the version in X-GPFDIST-VERSION, as gpfdist's do.
func (s *Server) serveGpfdist(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-GPFDIST-VERSION", VersionLine(s.knobs.Version))
	proto := r.Header.Get("X-GP-PROTO")
	if proto != "0" && proto != "1" {
		http.Error(w, "missing or unsupported X-GP-PROTO", http.StatusBadRequest)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if r.Method != http.MethodGet || name == "" {
		http.Error(w, "GET /<job> only", http.StatusBadRequest)
		return
	}
	if !s.runs(name) {
		http.Error(w, fmt.Sprintf("instance %s does not run job %s", s.name, name), http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("Expires", "0")
	h.Set("X-GP-PROTO", proto)
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	if proto == "1" {
		// An empty data block ends a good stream.
		var frame [5]byte
		frame[0] = 'D'
		binary.BigEndian.PutUint32(frame[1:], 0)
		_, _ = w.Write(frame[:])
	}
}
