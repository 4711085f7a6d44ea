#!/usr/bin/env bash
# Builds the etcd image a GpssCluster's managed etcd runs (a docker-archive
# for `ctr images import`): the upstream etcd that localkube builds
# (tools/localkube/components/etcd, etcd's own main at the version its
# go.mod pins), statically linked, run as a numeric non-root user.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image reference it builds
#
# Environment:
#   OUT      archive to write (default: _output/images/gpss-etcd.tar)
#   TAG      image reference (default: localhost/gpss-etcd:<etcd's version>, the
#            API's default, gpssv1.DefaultEtcdImage)
#   MKIMAGE  a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
lk=$repo/tools/localkube
version=$(awk '$1 == "go.etcd.io/etcd/server/v3" { sub(/^v/, "", $2); print $2 }' "$lk/go.mod")
[[ -n $version ]] || { echo "no go.etcd.io/etcd/server/v3 in $lk/go.mod" >&2; exit 1; }
OUT=${OUT:-$repo/_output/images/gpss-etcd.tar}
TAG=${TAG:-localhost/gpss-etcd:$version}

case ${1:-} in
inputs) printf '%s\n' "$lk/components/etcd" "$lk/go.mod" "$lk/go.sum" "TAG=$TAG"; exit 0 ;;
tag) echo "$TAG"; exit 0 ;;
'') ;;
*) echo "usage: $0 [inputs|tag]" >&2; exit 2 ;;
esac

if [[ -n ${MKIMAGE:-} ]]; then
	mkimage=("$MKIMAGE")
else
	mkimage=(go -C "$lk" run ./cmd/mkimage)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go -C "$lk" build -trimpath -ldflags '-s -w' -o "$tmp/etcd" ./components/etcd

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
"${mkimage[@]}" --tag "$TAG" \
	--file "$tmp/etcd:/usr/local/bin/etcd:0755" \
	--entrypoint /usr/local/bin/etcd \
	--user 65532:65532 \
	--expose 2379 --expose 2380 \
	--output "$OUT"
