#!/usr/bin/env bash
# Builds the GPSS simulator's image (a docker-archive for `ctr images
# import`): one layer holding the static gpss-simulator binary, run as a
# numeric non-root user, with GPSS's contract: the configuration file is
# the argument (docs/gpss.md). It is NOT GPSS: internal/gpss/simulator says
# what it models. Two images, tags 1.0 and 1.1, so that the tests can
# upgrade from one to the other and back: the same binary (one layer they
# share), each image reporting its own tag's version (GPSS_SIM_VERSION=1.1
# for localhost/gpss-simulator:1.1), which --version, gpfdist's
# X-GPFDIST-VERSION and the instance's log say. The archive holds both.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image references it builds
#
# Environment:
#   OUT      archive to write (default: _output/images/gpss-simulator.tar)
#   TAG      image references, space separated, one image each
#            (default: localhost/gpss-simulator:1.0 localhost/gpss-simulator:1.1)
#   ENV      K=V settings baked into every image, space separated (knobs:
#            GPSS_SIM_*, see internal/gpss/simulator); a GPSS_SIM_VERSION
#            here replaces the tags' versions
#   MKIMAGE  a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib.sh
source "$repo/images/lib.sh"
OUT=${OUT:-$repo/_output/images/gpss-simulator.tar}
TAG=${TAG:-localhost/gpss-simulator:1.0 localhost/gpss-simulator:1.1}
ENV=${ENV:-}

case ${1:-} in
inputs)
	printf '%s\n' "$repo/cmd/gpss-simulator" "$repo/internal/gpss" "$repo/images/lib.sh" "$repo/go.mod" "$repo/go.sum" "TAG=$TAG" "ENV=$ENV"
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
CGO_ENABLED=0 go -C "$repo" build -trimpath -ldflags '-s -w' -o "$tmp/gpss-simulator" ./cmd/gpss-simulator

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
build_tagged_images "$OUT" GPSS_SIM_VERSION tag_version \
	--file "$tmp/gpss-simulator:/gpss-simulator:0755" \
	--entrypoint /gpss-simulator \
	--user 65532:65532 \
	--expose 5000 --expose 8080 --expose 5001
