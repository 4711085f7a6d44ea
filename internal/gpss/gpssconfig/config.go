package gpssconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Config is the part of gpss.json that placement and discovery depend on.
// Keys it does not name stay in the file and are GPSS's business.
type Config struct {
	ListenAddress Address  `json:"ListenAddress"`
	Gpfdist       Address  `json:"Gpfdist"`
	Cluster       *Cluster `json:"Cluster,omitempty"`
}

// Address is where a GPSS listener binds: ListenAddress serves gRPC (the
// batch data and job APIs), Gpfdist serves Greenplum's segments.
type Address struct {
	Host string `json:"Host"`
	Port int    `json:"Port"`
}

// Cluster is the distributed GPSS block: the instances with the same Id
// cooperate through the etcd at Etcd.Endpoints.
type Cluster struct {
	ID   string `json:"Id"`
	Port int    `json:"Port,omitempty"`
	Etcd Etcd   `json:"Etcd"`
}

// Etcd is the etcd a cluster coordinates through.
type Etcd struct {
	Endpoints []string `json:"Endpoints"`
}

// Parse reads gpss.json as a GPSS server does before it starts: the file is
// one JSON object, its listeners have ports, and a Cluster block has an Id
// and etcd endpoints.
func Parse(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("gpss.json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, errors.New("gpss.json: more than one JSON value")
	}
	var problems []string
	for _, l := range []struct {
		name string
		port int
	}{{"ListenAddress.Port", c.ListenAddress.Port}, {"Gpfdist.Port", c.Gpfdist.Port}} {
		if !ValidPort(l.port) {
			problems = append(problems, fmt.Sprintf("%s %d is not a port (1-65535)", l.name, l.port))
		}
	}
	if c.Cluster != nil {
		if strings.TrimSpace(c.Cluster.ID) == "" {
			problems = append(problems, "Cluster.Id is empty")
		}
		if len(c.Cluster.Etcd.Endpoints) == 0 {
			problems = append(problems, "Cluster.Etcd.Endpoints is empty")
		}
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("gpss.json: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// ValidPort reports whether p is a TCP port a listener can bind.
func ValidPort(p int) bool { return p >= 1 && p <= 65535 }

// Owned is what the operator writes into every instance's gpss.json,
// whatever the user's configuration says.
type Owned struct {
	// ClusterID is Cluster.Id.
	ClusterID string
	// EtcdEndpoints is Cluster.Etcd.Endpoints.
	EtcdEndpoints []string
	// GRPCPort, GpfdistPort and ClusterPort are ListenAddress.Port,
	// Gpfdist.Port and Cluster.Port; the listeners bind every address
	// (Host ""), which a pod needs.
	GRPCPort, GpfdistPort, ClusterPort int
}

// OwnedKeys are the dotted paths of the keys Render writes; a user
// configuration that sets one is refused by Validate, not overwritten.
var OwnedKeys = []string{
	"ListenAddress.Host", "ListenAddress.Port",
	"Gpfdist.Host", "Gpfdist.Port",
	"Cluster.Id", "Cluster.Port", "Cluster.Etcd.Endpoints",
}

// Render returns gpss.json: user's configuration (a JSON object, possibly
// empty) with the owned keys set. Output is deterministic (keys sorted), so
// that its hash names its content.
//
// GPSS reads keys in any letter case, so each owned key, and each object
// on the way to it, is in the output once, spelled as OwnedKeys spells it:
// a user's "listenaddress" block is renamed ListenAddress (the same block
// to GPSS), a user's value of an owned key in another case ("cluster.id")
// gives way to the operator's, and two keys alike but for case on an owned
// key's way are an error, since GPSS would take one of them. Validate
// refuses all of these first; Render does not rely on it.
func Render(user []byte, owned Owned) ([]byte, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(user)) > 0 {
		if err := json.Unmarshal(user, &doc); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
	}
	set := func(path string, v any) error {
		keys := strings.Split(path, ".")
		m := doc
		for i, k := range keys {
			if err := spellAsOwned(m, k, keys[:i]); err != nil {
				return err
			}
			if i == len(keys)-1 {
				m[k] = v
				return nil
			}
			next, ok := m[k]
			if !ok {
				child := map[string]any{}
				m[k], m = child, child
				continue
			}
			child, ok := next.(map[string]any)
			if !ok {
				return fmt.Errorf("configuration: %s is not an object", strings.Join(keys[:i+1], "."))
			}
			m = child
		}
		return nil
	}
	for _, kv := range []struct {
		path string
		v    any
	}{
		{"ListenAddress.Host", ""}, {"ListenAddress.Port", owned.GRPCPort},
		{"Gpfdist.Host", ""}, {"Gpfdist.Port", owned.GpfdistPort},
		{"Cluster.Id", owned.ClusterID}, {"Cluster.Port", owned.ClusterPort},
		{"Cluster.Etcd.Endpoints", slices.Clone(owned.EtcdEndpoints)},
	} {
		if err := set(kv.path, kv.v); err != nil {
			return nil, err
		}
	}
	// encoding/json sorts map keys.
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return append(out, '\n'), nil
}

// spellAsOwned renames the key of m that is key but for letter case (the
// same key to GPSS) to key, so that m holds it once; two such keys are an
// error. parents are the owned keys leading to m, for the message.
func spellAsOwned(m map[string]any, key string, parents []string) error {
	var alike []string
	for k := range m {
		if strings.EqualFold(k, key) {
			alike = append(alike, k)
		}
	}
	switch {
	case len(alike) > 1:
		slices.Sort(alike)
		where := ""
		if len(parents) > 0 {
			where = " in " + strings.Join(parents, ".")
		}
		return fmt.Errorf("configuration: %s%s differ only by letter case, and GPSS would read one of them as %s",
			strings.Join(alike, " and "), where, key)
	case len(alike) == 1 && alike[0] != key:
		m[key] = m[alike[0]]
		delete(m, alike[0])
	}
	return nil
}
