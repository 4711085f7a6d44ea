package kube

import (
	"bufio"
	"bytes"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Sample is one series of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape, keyed by their series (the name
// and the sorted labels), so that two scrapes subtract series by series.
type Metrics map[string]Sample

// ParseMetrics reads a Prometheus text exposition, keeping the samples
// whose name keep accepts (all when keep is nil): an API server's is
// megabytes of histograms a benchmark mostly does not need. Comments and
// lines it cannot read are skipped.
func ParseMetrics(text []byte, keep func(name string) bool) Metrics {
	m := Metrics{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s, ok := parseSample(line, keep)
		if ok {
			m[s.key()] = s
		}
	}
	return m
}

// parseSample reads `name{label="value",...} value [timestamp]`.
func parseSample(line string, keep func(string) bool) (Sample, bool) {
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return Sample{}, false
	}
	s := Sample{Name: line[:end], Labels: map[string]string{}}
	if keep != nil && !keep(s.Name) {
		return Sample{}, false
	}
	rest := line[end:]
	if rest[0] == '{' {
		var ok bool
		if rest, ok = parseLabels(rest[1:], s.Labels); !ok {
			return Sample{}, false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return Sample{}, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Sample{}, false
	}
	s.Value = v
	return s, true
}

// parseLabels reads `a="x",b="y"}` into labels and returns what follows
// the closing brace.
func parseLabels(rest string, labels map[string]string) (string, bool) {
	for {
		rest = strings.TrimLeft(rest, " ,")
		if rest == "" {
			return "", false
		}
		if rest[0] == '}' {
			return rest[1:], true
		}
		eq := strings.Index(rest, `="`)
		if eq <= 0 {
			return "", false
		}
		name := rest[:eq]
		rest = rest[eq+2:]
		var value strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					value.WriteByte('\n')
				default:
					value.WriteByte(rest[i])
				}
				continue
			}
			value.WriteByte(rest[i])
		}
		if i == len(rest) {
			return "", false
		}
		labels[name] = value.String()
		rest = rest[i+1:]
	}
}

func (s Sample) key() string {
	names := make([]string, 0, len(s.Labels))
	for n := range s.Labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(s.Name)
	for _, n := range names {
		b.WriteString("|" + n + "=" + s.Labels[n])
	}
	return b.String()
}

// matches reports whether the sample carries every label of match, given
// as name, value pairs.
func (s Sample) matches(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if s.Labels[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// Sum adds the samples of name whose labels match, given as name, value
// pairs: Sum("rest_client_requests_total", "code", "409").
func (m Metrics) Sum(name string, match ...string) float64 {
	var sum float64
	for _, s := range m {
		if s.Name == name && s.matches(match) {
			sum += s.Value
		}
	}
	return sum
}

// Minus returns the counters' increase since before, series by series (a
// series before lacks counts from zero). Only meaningful for counters and
// histograms, and only when the process was not restarted in between.
func (m Metrics) Minus(before Metrics) Metrics {
	d := make(Metrics, len(m))
	for k, s := range m {
		s.Value -= before[k].Value
		d[k] = s
	}
	return d
}

// GroupBy sums the samples of name that match by the values of the labels
// by, joined with " ", leaving out zero sums:
// GroupBy("apiserver_request_total", []string{"verb", "resource"}, "code", "409").
func (m Metrics) GroupBy(name string, by []string, match ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.Name != name || !s.matches(match) {
			continue
		}
		parts := make([]string, len(by))
		for i, l := range by {
			parts[i] = s.Labels[l]
		}
		out[strings.Join(parts, " ")] += s.Value
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// Quantile estimates the q-quantile (0 < q < 1) of the histogram name
// (its name_bucket series) among the series that match, interpolating
// linearly within a bucket as Prometheus' histogram_quantile does. Applied
// to a Minus it is the quantile of what was observed in between. It
// returns NaN when nothing was observed, and the largest finite bound when
// the quantile falls in the +Inf bucket.
func (m Metrics) Quantile(q float64, name string, match ...string) float64 {
	counts := map[float64]float64{}
	for _, s := range m {
		if s.Name != name+"_bucket" || !s.matches(match) {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		counts[le] += s.Value
	}
	bounds := make([]float64, 0, len(counts))
	for le := range counts {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || counts[bounds[len(bounds)-1]] <= 0 {
		return math.NaN()
	}
	total := counts[bounds[len(bounds)-1]]
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		c := counts[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if c == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(c-below)
		}
		lower, below = le, c
	}
	return lower
}
