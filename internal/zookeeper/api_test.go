package zookeeper_test

import (
	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// The API type is a framework object with pause. This is asserted here, not
// in internal/zookeeper/build, whose tests must not compile the framework
// (and controller-runtime's manager) to stay quick (docs/testing.md).
var (
	_ framework.Object   = &zkv1.ZookeeperCluster{}
	_ framework.Pausable = &zkv1.ZookeeperCluster{}
)
