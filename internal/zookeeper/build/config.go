package build

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// The files of the config ConfigMap, mounted at /conf (the image's
// contract).
const (
	ZooCfgKey        = "zoo.cfg"
	DynamicConfigKey = "zoo.cfg.dynamic"
	// JoiningConfigKey holds the line of a server that joins the ensemble
	// (see MembersConfigMap).
	JoiningConfigKey = "zoo.cfg.joining"
)

// DataDir is where the volume is mounted and ZooKeeper keeps its data.
const DataDir = "/data"

// FourLetterWords are the four-letter commands the servers answer; the
// probes use srvr and ruok.
const FourLetterWords = "srvr,stat,mntr,ruok,conf"

// configDefaults are the zoo.cfg keys the operator writes unless spec.config
// sets them.
//
// connectToLearnerMasterLimit bounds a follower's attempts to connect to the
// leader it elected (otherwise initLimit, 20 s). A survivor of lost pods may
// still resolve the new leader's name to the address of the pod it replaced
// (DNS caches); each connect to that dead address waits out the limit
// before the follower looks up the leader again, and healing two lost pods
// took 18-32 s instead of 7 s. Two ticks (4 s) is ample for a TCP connect
// inside a cluster; syncing with the leader is still bounded by initLimit.
var configDefaults = map[string]string{
	"tickTime":                    "2000",
	"initLimit":                   "10",
	"syncLimit":                   "5",
	"connectToLearnerMasterLimit": "2",
}

// ZooCfg returns the content of zoo.cfg: the keys the operator owns, the
// tunables it defaults, and spec.config, one key=value line each, sorted by
// key, values escaped as Java properties (PropertyValue). Operator-owned keys in spec.config (which admission rejects) are
// ignored. Membership is not here but in zoo.cfg.dynamic, which zk-run
// points dynamicConfigFile at; the client port is in its server lines.
func ZooCfg(zk *zkv1.ZookeeperCluster) string {
	cfg := maps.Clone(configDefaults)
	for k, v := range zk.Spec.Config {
		if !zkv1.IsOperatorOwnedConfigKey(k) {
			cfg[k] = v
		}
	}
	maps.Copy(cfg, map[string]string{
		"dataDir":                DataDir,
		"reconfigEnabled":        "true",
		"standaloneEnabled":      "false",
		"quorumListenOnAllIPs":   "true",
		"admin.enableServer":     "true",
		"admin.serverPort":       strconv.Itoa(int(zk.Spec.AdminPort)),
		"4lw.commands.whitelist": FourLetterWords,
	})
	var b strings.Builder
	b.WriteString("# Written by Steward for ZookeeperCluster " + zk.Namespace + "/" + zk.Name + "; edit spec.config instead.\n")
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		b.WriteString(k + "=" + PropertyValue(cfg[k]) + "\n")
	}
	return b.String()
}

// Members returns the ensemble members with the given server ids, each a
// participant at its pod's stable DNS name, with the client port on every
// address: server.N=<pod>.<headless>.<ns>.svc.<domain>:2888:3888:participant;0.0.0.0:2181.
func Members(zk *zkv1.ZookeeperCluster, ids []int, domain string) []zkclient.Member {
	out := make([]zkclient.Member, 0, len(ids))
	for _, id := range ids {
		out = append(out, zkclient.Member{
			ID:           id,
			Address:      PodAddress(zk, Ordinal(id), domain),
			QuorumPort:   int(QuorumPort),
			ElectionPort: int(ElectionPort),
			Type:         zkclient.Participant,
			ClientPort:   int(ClientPort),
		})
	}
	return out
}

// IDs returns the server ids 1..n, of an ensemble of n servers in pods
// 0..n-1.
func IDs(n int32) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = ServerID(i)
	}
	return ids
}

// DynamicConfig returns the content of zoo.cfg.dynamic for members: one
// server line per member in id order, without a version line.
func DynamicConfig(members []zkclient.Member) string {
	c := zkclient.Config{Members: make(map[int]zkclient.Member, len(members))}
	for _, m := range members {
		c.Members[m.ID] = m
	}
	return c.String()
}

// ConfigData returns the data of the config ConfigMap, for the framework's
// EnsureConfigMap(ComponentConfig, data): zoo.cfg alone. It is immutable
// and content-addressed: a change makes a new ConfigMap, a new pod
// template, and a rolling restart. Membership is not in it but in the
// members ConfigMap (MembersConfigMap), which changes in place, since
// running servers learn membership by dynamic reconfiguration and need no
// restart for it.
func ConfigData(zk *zkv1.ZookeeperCluster) map[string]string {
	return map[string]string{ZooCfgKey: ZooCfg(zk)}
}

// ConfigRevision returns the hash of the config ConfigMap's data, which
// the pod template carries (ConfigRevisionAnnotation), so that the pods
// show which zoo.cfg they run with.
func ConfigRevision(data map[string]string) string {
	return standard.ConfigHash(data)
}

// MembersConfigMapName is the name of the members ConfigMap.
func MembersConfigMapName(zk *zkv1.ZookeeperCluster) string { return zk.Name + "-members" }

// MembersConfigMap returns the members ConfigMap: zoo.cfg.dynamic with the
// committed members, mounted next to zoo.cfg, and, while a server joins,
// zoo.cfg.joining with that server's line. The controller writes the
// committed membership into it after every reconfiguration, so that a
// server that starts again (a new pod, or a container restart once the
// kubelet has refreshed the volume) comes back with the ensemble as it is,
// not as it was when its pod was made; a server that starts with an older
// membership learns the current one from the leader.
//
// The joining server is kept apart so that it never counts as a voter
// before the ensemble has added it: the image's zk-run appends the line in
// zoo.cfg.joining only on the server whose id it names and which is not a
// member yet, which then follows the leader without a vote until the
// controller adds it. A member that restarts meanwhile starts with the
// committed members alone. joining is nil when no server joins.
func MembersConfigMap(zk *zkv1.ZookeeperCluster, members []zkclient.Member, joining *zkclient.Member) *corev1.ConfigMap {
	data := map[string]string{DynamicConfigKey: DynamicConfig(members)}
	if joining != nil {
		data[JoiningConfigKey] = joining.String() + "\n"
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      MembersConfigMapName(zk),
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentMembers),
		},
		Data: data,
	}
}

// PropertyValue escapes v for the value side of a Java properties line, the
// way java.util.Properties.store does, so that ZooKeeper (which reads
// zoo.cfg with Properties.load, as ISO-8859-1) gets v exactly: backslashes,
// line breaks, tabs and form feeds are escaped, a leading space is escaped,
// and every character outside printable ASCII becomes \uXXXX (UTF-16). A
// value therefore cannot end its line early and inject another key.
func PropertyValue(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
