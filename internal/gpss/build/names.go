package build

import (
	"fmt"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// App and PartOf are the app.kubernetes.io/name and part-of of every
// child; the controller registers with the same.
const (
	App    = "gpss"
	PartOf = "gpss"
)

// Components, the app.kubernetes.io/component of the children.
const (
	// ComponentInstance: the StatefulSet of the GPSS instances and its pods.
	ComponentInstance = "instance"
	// ComponentHeadless: the instances' headless Service (stable pod names).
	ComponentHeadless = "headless"
	// ComponentGRPC: the gRPC Service gpsscli connects to.
	ComponentGRPC = "grpc"
	// ComponentGpfdist: the per-instance gpfdist Services.
	ComponentGpfdist = "gpfdist"
	// ComponentConfig: the gpss.json ConfigMaps.
	ComponentConfig = "config"
	// ComponentEtcd: the managed etcd's StatefulSet, pods, volumes and
	// Service.
	ComponentEtcd = "etcd"
)

// Port names, on the containers and the Services.
const (
	PortNameGRPC       = "grpc"
	PortNameGpfdist    = "gpfdist"
	PortNameCluster    = "cluster"
	PortNameEtcdClient = "client"
	PortNameEtcdPeer   = "peer"
)

// The managed etcd's ports.
const (
	EtcdClientPort int32 = 2379
	EtcdPeerPort   int32 = 2380
)

// DefaultClusterDomain is the cluster's DNS domain unless the controller is
// told another.
const DefaultClusterDomain = "cluster.local"

// InstancesName names the instances' StatefulSet: the cluster's name.
func InstancesName(g *gpssv1.GpssCluster) string { return g.Name }

// HeadlessServiceName names the instances' headless Service.
func HeadlessServiceName(g *gpssv1.GpssCluster) string { return g.Name + "-headless" }

// GRPCServiceName names the gRPC Service.
func GRPCServiceName(g *gpssv1.GpssCluster) string { return g.Name + "-grpc" }

// PodName is the name of the instance of the given ordinal.
func PodName(g *gpssv1.GpssCluster, ordinal int) string { return fmt.Sprintf("%s-%d", g.Name, ordinal) }

// GpfdistServiceName names the gpfdist Service of the instance of the given
// ordinal.
func GpfdistServiceName(g *gpssv1.GpssCluster, ordinal int) string {
	return PodName(g, ordinal) + "-gpfdist"
}

// ServiceAccountName is the instances' ServiceAccount: spec's, or the one
// the operator creates.
func ServiceAccountName(g *gpssv1.GpssCluster) string {
	if g.Spec.ServiceAccountName != "" {
		return g.Spec.ServiceAccountName
	}
	return OwnServiceAccountName(g)
}

// OwnServiceAccountName names the ServiceAccount the operator creates when
// spec.serviceAccountName is empty.
func OwnServiceAccountName(g *gpssv1.GpssCluster) string { return g.Name + "-gpss" }

// EtcdName names the managed etcd's StatefulSet and its headless Service.
func EtcdName(g *gpssv1.GpssCluster) string { return g.Name + "-etcd" }

// Labels are the standard labels of g's children playing component.
func Labels(g *gpssv1.GpssCluster, component string) map[string]string {
	return standard.Labels(App, g.Name, component, PartOf)
}

// Selector selects g's children playing component.
func Selector(g *gpssv1.GpssCluster, component string) map[string]string {
	return standard.Selector(App, g.Name, component)
}

func orDefault(domain string) string {
	if domain == "" {
		return DefaultClusterDomain
	}
	return domain
}
