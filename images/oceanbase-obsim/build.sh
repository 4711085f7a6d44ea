#!/usr/bin/env bash
# Builds the OceanBase observer simulator's image (a docker-archive for
# `ctr images import`): one layer holding the static obsim binary, run as a
# numeric non-root user, taking the observer's start arguments
# (docs/oceanbase.md, the image contract). It is NOT OceanBase:
# internal/oceanbase/obsim says what it models. Two images, tags 1.0 and
# 1.1, so that the tests can upgrade from one to the other: the same binary
# (one layer they share), each image reporting its own OceanBase version
# (obsim:1.0 is 4.3.5.1, obsim:1.1 is 4.3.5.2: OBSIM_BUILD_VERSION), which
# DBA_OB_SERVERS.BUILD_VERSION and the MySQL handshake say. The archive
# holds both.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image references it builds
#
# Environment:
#   OUT      archive to write (default: _output/images/oceanbase-obsim.tar)
#   TAG      image references, space separated
#            (default: localhost/obsim:1.0 localhost/obsim:1.1: the second for upgrades)
#   ENV      K=V settings baked into every image, space separated (knobs:
#            OBSIM_*, see internal/oceanbase/obsim); an OBSIM_BUILD_VERSION
#            here replaces the tags' versions
#   MKIMAGE  a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib.sh
source "$repo/images/lib.sh"
OUT=${OUT:-$repo/_output/images/oceanbase-obsim.tar}
TAG=${TAG:-localhost/obsim:1.0 localhost/obsim:1.1}
ENV=${ENV:-}

case ${1:-} in
inputs)
	printf '%s\n' "$repo/cmd/obsim" "$repo/internal/oceanbase/obsim" "$repo/images/lib.sh" "$repo/go.mod" "$repo/go.sum" "TAG=$TAG" "ENV=$ENV"
	exit 0
	;;
tag) echo "$TAG"; exit 0 ;;
'') ;;
*) echo "usage: $0 [inputs|tag]" >&2; exit 2 ;;
esac

if [[ -n ${MKIMAGE:-} ]]; then
	mkimage=("$MKIMAGE")
else
	mkimage=(go -C "$repo/tools/localkube" run ./cmd/mkimage)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go -C "$repo" build -trimpath -ldflags '-s -w' -o "$tmp/obsim" ./cmd/obsim

# buildVersion is the build_version, in OceanBase's format, of the
# OceanBase version a tag stands for: 1.1 is the next patch release.
buildVersion() {
	local version=4.3.5.1
	[[ $(tag_version "$1") == 1.1 ]] && version=4.3.5.2
	echo "${version}_101000012025012817-obsim(Jan 28 2025 17:00:00)"
}

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
build_tagged_images "$OUT" OBSIM_BUILD_VERSION buildVersion \
	--file "$tmp/obsim:/obsim:0755" \
	--entrypoint /obsim \
	--user 65532:65532 \
	--expose 2881 --expose 2882
