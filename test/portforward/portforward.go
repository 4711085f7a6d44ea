// Package portforward forwards a local port to a Service or pod of the
// local cluster with kubectl port-forward, for the end-to-end suite and the
// benchmarks, which reach in-cluster servers (metrics, S3) from the test
// process. Traffic goes to 127.0.0.1 only.
package portforward

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
)

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)

// Start runs kubectl (with the kubeconfig, when not empty) to forward a
// free port of 127.0.0.1 to port of target (such as "svc/versitygw") in
// ns, and returns the local address and a function that stops it.
func Start(kubectl, kubeconfig, ns, target string, port int) (addr string, stop func(), err error) {
	cmd := exec.Command(kubectl, "port-forward", "-n", ns, "--address", "127.0.0.1", target, fmt.Sprintf(":%d", port))
	if kubeconfig != "" {
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return "127.0.0.1:" + m[1], stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("kubectl port-forward %s ended without forwarding: %w", target, lines.Err())
}
