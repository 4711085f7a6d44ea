package build

import (
	"fmt"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// App and PartOf are the app.kubernetes.io/name and part-of of every
// child; the controller registers with the same (framework.Options).
const (
	App    = "zookeeper"
	PartOf = "zookeeper"
)

// Components, the app.kubernetes.io/component of the children.
const (
	// ComponentServer: the StatefulSet, its pods and volumes, and the
	// PodDisruptionBudget.
	ComponentServer = "server"
	// ComponentHeadless: the peers' headless Service.
	ComponentHeadless = "headless"
	// ComponentClient: the client Service.
	ComponentClient = "client"
	// ComponentConfig: the config ConfigMaps (framework EnsureConfigMap).
	ComponentConfig = "config"
	// ComponentMembers: the members ConfigMap (zoo.cfg.dynamic).
	ComponentMembers = "members"
	// ComponentCredentials: the Secret with the super user's password.
	ComponentCredentials = "credentials"
)

// The servers' ports. Only the AdminServer's is configurable
// (spec.adminPort).
const (
	ClientPort   int32 = 2181
	QuorumPort   int32 = 2888
	ElectionPort int32 = 3888
)

// Port names, on the containers and the Services.
const (
	PortNameClient   = "client"
	PortNameQuorum   = "quorum"
	PortNameElection = "election"
	PortNameAdmin    = "admin"
)

// DefaultClusterDomain is the cluster's DNS domain unless the controller is
// told another.
const DefaultClusterDomain = "cluster.local"

// HeadlessServiceName is the name of the peers' headless Service.
func HeadlessServiceName(zk *zkv1.ZookeeperCluster) string { return zk.Name + "-headless" }

// ClientServiceName is the name of the client Service.
func ClientServiceName(zk *zkv1.ZookeeperCluster) string { return zk.Name + "-client" }

// PodName is the name of the pod of the given ordinal.
func PodName(zk *zkv1.ZookeeperCluster, ordinal int) string {
	return fmt.Sprintf("%s-%d", zk.Name, ordinal)
}

// ServerID is the id (myid) of the server in the pod of the given ordinal:
// the image derives it from the host name, ordinal + 1.
func ServerID(ordinal int) int { return ordinal + 1 }

// Ordinal is the ordinal of the pod running server id.
func Ordinal(id int) int { return id - 1 }

// PodAddress is the stable DNS name of the pod of the given ordinal,
// through the headless Service: <pod>.<headless>.<namespace>.svc.<domain>.
// An empty domain is DefaultClusterDomain.
func PodAddress(zk *zkv1.ZookeeperCluster, ordinal int, domain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", PodName(zk, ordinal), HeadlessServiceName(zk), zk.Namespace, orDefault(domain))
}

// ClientEndpoint is the host:port of the client Service, for
// status.clientEndpoint.
func ClientEndpoint(zk *zkv1.ZookeeperCluster, domain string) string {
	return fmt.Sprintf("%s.%s.svc.%s:%d", ClientServiceName(zk), zk.Namespace, orDefault(domain), ClientPort)
}

// Labels are the standard labels of zk's children playing component, as
// the framework's Context.Labels gives them.
func Labels(zk *zkv1.ZookeeperCluster, component string) map[string]string {
	return standard.Labels(App, zk.Name, component, PartOf)
}

// Selector selects zk's children playing component, as the framework's
// Context.Selector gives it (the standard labels without part-of).
func Selector(zk *zkv1.ZookeeperCluster, component string) map[string]string {
	return standard.Selector(App, zk.Name, component)
}

func orDefault(domain string) string {
	if domain == "" {
		return DefaultClusterDomain
	}
	return domain
}
