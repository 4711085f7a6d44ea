#!/usr/bin/env bash
# Builds the OceanBase observer simulator's image (a docker-archive for
# `ctr images import`): one layer holding the static obsim binary, run as a
# numeric non-root user, taking the observer's start arguments
# (docs/oceanbase.md, the image contract). It is NOT OceanBase:
# internal/oceanbase/obsim says what it models.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image references it builds
#
# Environment:
#   OUT      archive to write (default: _output/images/oceanbase-obsim.tar)
#   TAG      image references, space separated
#            (default: localhost/obsim:1.0 localhost/obsim:1.1: the second for upgrades)
#   ENV      K=V settings baked into the image, space separated (knobs:
#            OBSIM_*, see internal/oceanbase/obsim)
#   MKIMAGE  a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-$repo/_output/images/oceanbase-obsim.tar}
TAG=${TAG:-localhost/obsim:1.0 localhost/obsim:1.1}
ENV=${ENV:-}

case ${1:-} in
inputs)
	printf '%s\n' "$repo/cmd/obsim" "$repo/internal/oceanbase/obsim" "$repo/go.mod" "$repo/go.sum" "TAG=$TAG" "ENV=$ENV"
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

args=()
for t in $TAG; do args+=(--tag "$t"); done
for e in $ENV; do args+=(--env "$e"); done
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
"${mkimage[@]}" "${args[@]}" \
	--file "$tmp/obsim:/obsim:0755" \
	--entrypoint /obsim \
	--user 65532:65532 \
	--expose 2881 --expose 2882 \
	--output "$OUT"
