package build

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Pinned versions of what is built from other modules. The Kubernetes
// components' version is the k8s.io/kubernetes requirement in go.mod.
const (
	KwokModule    = "sigs.k8s.io/kwok"
	KwokVersion   = "v0.8.0"
	CoreDNSModule = "github.com/coredns/coredns@v1.14.7"
	RuncModule    = "github.com/opencontainers/runc@v1.5.2"
)

// Packages are the Debian packages the node needs: the container runtime,
// CNI plugins, packet filtering and connection tracking for kube-proxy,
// libseccomp for runc, nsenter and ip, and mkfs.ext4 and the loop mount
// for the volumes of a StorageClass with a filesystem (provisioner).
var Packages = []string{"containerd", "containernetworking-plugins", "iptables", "conntrack",
	"libseccomp-dev", "iproute2", "util-linux", "e2fsprogs", "mount"}

// Builder builds into BinDir from the localkube module at Source.
type Builder struct {
	Source string
	BinDir string
	Out    io.Writer
}

// All builds everything `localkube up` needs.
func (b Builder) All() error {
	if err := os.MkdirAll(b.BinDir, 0o755); err != nil {
		return err
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"Debian packages", b.packages},
		{"Kubernetes components and etcd", b.components},
		{"localkube tools", b.tools},
		{"kwok", func() error { return b.goInstall("kwok", KwokModule+"/cmd/kwok@"+KwokVersion, nil) }},
		{"kwok stages", b.kwokStages},
		{"CoreDNS", func() error { return b.goInstall("coredns", CoreDNSModule, nil) }},
		{"runc", func() error {
			return b.goInstall("runc", RuncModule, []string{"CGO_ENABLED=1"}, "-tags", "seccomp")
		}},
		{"pause image", b.pauseImage},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.run(); err != nil {
			return fmt.Errorf("build %s: %w", s.name, err)
		}
		fmt.Fprintf(b.Out, "%-32s ok (%s)\n", s.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// packages installs the missing Debian packages.
func (b Builder) packages() error {
	var missing []string
	for _, p := range Packages {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("packages %v are missing and installing them needs root", missing)
	}
	fmt.Fprintf(b.Out, "Installing %s\n", strings.Join(missing, " "))
	if err := b.run(nil, "", "apt-get", "update", "-q"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	return b.run([]string{"DEBIAN_FRONTEND=noninteractive"}, "", "apt-get", args...)
}

// components builds the upstream mains under components/, stamped with the
// Kubernetes version go.mod requires so that nodes and clients report it.
func (b Builder) components() error {
	version, err := kubernetesVersion(filepath.Join(b.Source, "go.mod"))
	if err != nil {
		return err
	}
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	var ldflags strings.Builder
	ldflags.WriteString("-s -w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&ldflags, " -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
			pkg, version, major, minor)
	}
	key, err := b.hashSources("go.mod", "go.sum", "components")
	if err != nil {
		return err
	}
	return b.stamped("components", "kube-apiserver", key+ldflags.String(), func() error {
		return b.run(nil, b.Source, "go", "build", "-ldflags="+ldflags.String(), "-o", b.BinDir+"/", "./components/...")
	})
}

// kubernetesVersion reads the k8s.io/kubernetes requirement of go.mod.
func kubernetesVersion(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == "k8s.io/kubernetes" {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require k8s.io/kubernetes", gomod)
}

// tools builds localkube itself and its helpers.
func (b Builder) tools() error {
	key, err := b.hashSources("go.mod", "go.sum", "cmd", "internal")
	if err != nil {
		return err
	}
	return b.stamped("tools", "localkube", key, func() error {
		return b.run([]string{"CGO_ENABLED=0"}, b.Source, "go", "build", "-trimpath", "-o", b.BinDir+"/",
			"./cmd/localkube", "./cmd/pause", "./cmd/runc-wrapper", "./cmd/mkimage")
	})
}

// goInstall builds a command from another module at a pinned version.
func (b Builder) goInstall(name, module string, env []string, flags ...string) error {
	key := strings.Join(append([]string{module, runtime.Version()}, append(env, flags...)...), " ")
	return b.stamped(name, name, key, func() error {
		args := append(append([]string{"install", "-trimpath"}, flags...), module)
		return b.run(append(env, "GOBIN="+b.BinDir), os.TempDir(), "go", args...)
	})
}

// kwokStages collects kwok's own stage definitions (simulated nodes become
// Ready and renew their Leases; simulated pods become Ready, complete and
// go away) from its module at the pinned version into one configuration
// file, since the kwok binary ships none by default.
func (b Builder) kwokStages() error {
	module := KwokModule + "@" + KwokVersion
	return b.stamped("kwok-stages", "kwok-stages.yaml", module, func() error {
		cmd := exec.Command("go", "mod", "download", "-json", module)
		cmd.Dir = os.TempDir()
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("locate %s: %w", module, err)
		}
		var info struct{ Dir string }
		if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
			return fmt.Errorf("locate %s: no module directory in %q: %w", module, out, err)
		}
		var docs []string
		for _, f := range []string{
			"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
			"pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml",
		} {
			data, err := os.ReadFile(filepath.Join(info.Dir, "kustomize", "stage", f))
			if err != nil {
				return err
			}
			docs = append(docs, strings.TrimSpace(string(data)))
		}
		return os.WriteFile(filepath.Join(b.BinDir, "kwok-stages.yaml"), []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
	})
}

// pauseImage packs the pause binary as the node's sandbox image.
func (b Builder) pauseImage() error {
	key, err := hashFile(filepath.Join(b.BinDir, "pause"))
	if err != nil {
		return err
	}
	return b.stamped("pause.tar", "pause.tar", key, func() error {
		return b.run(nil, "", filepath.Join(b.BinDir, "mkimage"), "--tag", "localhost/localkube/pause:1",
			"--file", filepath.Join(b.BinDir, "pause")+":/pause:0755", "--entrypoint", "/pause",
			"--user", "65535:65535", "--output", filepath.Join(b.BinDir, "pause.tar"))
	})
}

// stamped runs build unless the stamp of name records key and output, a
// file the build makes, exists.
func (b Builder) stamped(name, output, key string, build func() error) error {
	stamp := filepath.Join(b.BinDir, ".stamp-"+name)
	if old, err := os.ReadFile(stamp); err == nil && string(old) == key {
		if _, err := os.Stat(filepath.Join(b.BinDir, output)); err == nil {
			return nil
		}
	}
	if err := build(); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(key), 0o644)
}

func (b Builder) run(env []string, dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = b.Out, b.Out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// hashSources hashes the named files and every file under the named
// directories of the module, with the Go version.
func (b Builder) hashSources(paths ...string) (string, error) {
	h := sha256.New()
	_, _ = io.WriteString(h, runtime.Version())
	var files []string
	for _, p := range paths {
		err := filepath.WalkDir(filepath.Join(b.Source, p), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
