package build

import (
	"fmt"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/gpss/gpssconfig"
)

// ConfigKey is gpss.json's key in the config ConfigMap; ConfigDir is where
// it is mounted, and ConfigPath the argument the image is started with
// (its contract: docs/gpss.md).
const (
	ConfigKey  = "gpss.json"
	ConfigDir  = "/etc/gpss"
	ConfigPath = ConfigDir + "/" + ConfigKey
)

// EtcdEndpoints are the etcd client URLs the instances use: spec's, or
// each member of the managed etcd by its stable name (g defaulted).
func EtcdEndpoints(g *gpssv1.GpssCluster, domain string) []string {
	if len(g.Spec.Etcd.Endpoints) > 0 {
		return append([]string(nil), g.Spec.Etcd.Endpoints...)
	}
	out := make([]string, g.Spec.Etcd.Managed.Replicas)
	for i := range out {
		out[i] = fmt.Sprintf("http://%s:%d", EtcdMemberAddress(g, i, domain), EtcdClientPort)
	}
	return out
}

// GpssJSON renders the instances' gpss.json: spec.config with the keys the
// operator owns set from spec (gpssconfig.Render).
func GpssJSON(g *gpssv1.GpssCluster, domain string) ([]byte, error) {
	var user []byte
	if g.Spec.Config != nil {
		user = g.Spec.Config.Raw
	}
	p := g.Spec.Ports
	return gpssconfig.Render(user, gpssconfig.Owned{
		ClusterID:     g.Spec.ClusterID,
		EtcdEndpoints: EtcdEndpoints(g, domain),
		GRPCPort:      int(p.GRPC), GpfdistPort: int(p.Gpfdist), ClusterPort: int(p.Cluster),
	})
}

// ConfigData is the config ConfigMap's data, for the framework's
// EnsureConfigMap (immutable, named by its content's hash).
func ConfigData(g *gpssv1.GpssCluster, domain string) (map[string]string, error) {
	cfg, err := GpssJSON(g, domain)
	if err != nil {
		return nil, err
	}
	return map[string]string{ConfigKey: string(cfg)}, nil
}
