package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/stewardhq/steward/tools/localkube/internal/pki"
)

// writeFiles writes the certificates, tokens, kubeconfigs and component
// configurations of a new cluster.
func (c Config) writeFiles() error {
	for _, dir := range []string{"pki", "kubeconfigs", "cni", "logs", "pids", "volumes", "pod-logs", "kubelet"} {
		if err := os.MkdirAll(c.Path(dir), 0o755); err != nil {
			return err
		}
	}
	if err := c.writePKI(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	tokens := map[string]string{}
	for _, id := range c.identities() {
		tok, err := pki.Token()
		if err != nil {
			return err
		}
		tokens[id.Name] = tok
	}
	ca := c.Path("pki", "ca.crt")
	files := map[string]string{
		c.Path("pki", "tokens.csv"):            renderTokenFile(c.identities(), tokens),
		c.Kubeconfig():                         renderKubeconfig(c.HostAPIAddress(), ca, tokens["admin"]),
		c.Path("containerd.toml"):              c.renderContainerdConfig(),
		c.Path("cni", "10-localkube.conflist"): renderCNIConfig(),
		c.Path("kubelet.yaml"):                 c.renderKubeletConfig(),
		c.Path("resolv.conf"):                  renderResolvConf(),
		c.Path("kube-proxy.yaml"):              c.renderKubeProxyConfig(),
		c.Path("Corefile"):                     c.renderCorefile(),
		c.Path("audit-policy.yaml"):            renderAuditPolicy(),
	}
	for _, id := range c.identities() {
		files[c.Path("kubeconfigs", id.Name+".kubeconfig")] = renderKubeconfig(InternalAPIAddress(), ca, tokens[id.Name])
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) writePKI() error {
	dir := c.Path("pki")
	ca, err := pki.NewAuthority("localkube-ca")
	if err != nil {
		return err
	}
	if err := pki.WritePair(dir, "ca", ca.Cert, ca.Key); err != nil {
		return err
	}
	serving, key, err := ca.Sign(pki.Request{
		CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + ClusterDomain},
		IPs:    []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP), net.ParseIP(APIServiceIP)},
		Server: true,
	})
	if err != nil {
		return err
	}
	if err := pki.WritePair(dir, "apiserver", serving, key); err != nil {
		return err
	}
	client, key, err := ca.Sign(pki.Request{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		return err
	}
	if err := pki.WritePair(dir, "apiserver-kubelet-client", client, key); err != nil {
		return err
	}
	return pki.WriteServiceAccountKey(dir)
}

// removeState deletes the state directory and the runtime directory.
func (c Config) removeState() error {
	for _, dir := range []string{c.StateDir, c.RunDir} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	return nil
}

// requiredBinaries are the files `up` needs from `localkube build`.
var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"kubelet", "kube-proxy", "kubectl", "runc", "runc-wrapper", "coredns", "kwok", "kwok-stages.yaml", "localkube", "pause.tar"}

func (c Config) checkBinaries() error {
	for _, name := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(c.BinDir, name)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `localkube build` first", name, c.BinDir)
		}
	}
	return nil
}
