package build

import "strings"

// LocalityWith is locality with a full replica in zone added after the
// others, which are kept as written; locality itself when it already has a
// replica in zone.
func LocalityWith(locality, zone string) string {
	parts := localityParts(locality)
	for _, p := range parts {
		if localityZone(p) == zone {
			return strings.Join(parts, ", ")
		}
	}
	return strings.Join(append(parts, "FULL{1}@"+zone), ", ")
}

// LocalityWithout is locality without zone's replicas, the others kept as
// written.
func LocalityWithout(locality, zone string) string {
	var out []string
	for _, p := range localityParts(locality) {
		if localityZone(p) != zone {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// localityParts splits a locality ("FULL{1}@z1, FULL{1}@z2") into its
// replicas, trimmed.
func localityParts(locality string) []string {
	var out []string
	for _, p := range strings.Split(locality, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func localityZone(part string) string {
	_, zone, _ := strings.Cut(part, "@")
	return strings.TrimSpace(zone)
}
