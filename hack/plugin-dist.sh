#!/usr/bin/env bash
# Builds the kubectl plugin's release archives: one
# kubectl-steward_<version>_<os>_<arch>.tar.gz per platform (the binary
# and kubectl_complete-steward, kubectl's completion of the plugin), and
# SHA256SUMS beside them, in DIST_DIR. Static binaries
# (CGO off), so one archive runs on any machine of its platform.
#
#   hack/plugin-dist.sh VERSION LDFLAGS
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?version}
ldflags=${2:-}
dist=${DIST_DIR:-_output/dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}

rm -rf "$dist" && mkdir -p "$dist"
for p in $platforms; do
	os=${p%/*} arch=${p#*/}
	name=kubectl-steward_${version}_${os}_${arch}
	work=$(mktemp -d)
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$work/kubectl-steward" ./cmd/kubectl-steward
	cp cmd/kubectl-steward/kubectl_complete-steward "$work/"
	tar -C "$work" -czf "$dist/$name.tar.gz" .
	rm -rf "$work"
	echo "$dist/$name.tar.gz"
done
(cd "$dist" && sha256sum ./*.tar.gz > SHA256SUMS)
