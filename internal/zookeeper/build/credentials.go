package build

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	zkv1 "github.com/stewardhq/steward/api/zookeeper/v1alpha1"
	"github.com/stewardhq/steward/internal/zookeeper/zkclient"
)

// Keys of the credentials Secret.
const (
	// SuperPasswordKey holds the super user's password, with which the
	// controller authenticates to reconfigure the ensemble.
	SuperPasswordKey = "superPassword"
	// SuperDigestKey holds zkclient.SuperDigest of that password, which the
	// servers get as -Dzookeeper.DigestAuthenticationProvider.superDigest.
	SuperDigestKey = "superDigest"
)

// CredentialsSecretName is the name of the credentials Secret.
func CredentialsSecretName(zk *zkv1.ZookeeperCluster) string { return zk.Name + "-credentials" }

// CredentialsSecret returns the credentials Secret for password, which the
// controller generates once when it creates the cluster and never changes
// (the running servers hold its digest). Dynamic reconfiguration needs
// ZooKeeper's super user: the alternative, skipACL, would switch off every
// ACL the cluster's clients set. The servers get only the digest; the
// password stays with the controller.
func CredentialsSecret(zk *zkv1.ZookeeperCluster, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      CredentialsSecretName(zk),
			Namespace: zk.Namespace,
			Labels:    Labels(zk, ComponentCredentials),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			SuperPasswordKey: []byte(password),
			SuperDigestKey:   []byte(zkclient.SuperDigest(password)),
		},
	}
}
