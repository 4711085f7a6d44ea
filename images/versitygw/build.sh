#!/usr/bin/env bash
# Builds the versitygw image (a docker-archive for `ctr images import`): the
# S3 server the e2e suite, `make demo-matrixone` and the benchmarks run as
# MatrixOne's object store (docs/design/matrixone-data.md). versitygw's own
# main at the version this directory's go.mod pins, statically linked, run
# as a numeric non-root user with its POSIX backend.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image reference it builds
#
# Environment:
#   OUT      archive to write (default: _output/images/versitygw.tar)
#   TAG      image reference (default: localhost/versitygw:<version>)
#   MKIMAGE  a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
module=github.com/versity/versitygw
version=$(awk -v m="$module" '$1 == "require" && $2 == m { print $3 } $1 == m { print $2 }' "$here/go.mod")
[[ -n $version ]] || { echo "no $module in $here/go.mod" >&2; exit 1; }
OUT=${OUT:-$repo/_output/images/versitygw.tar}
TAG=${TAG:-localhost/versitygw:${version#v}}

case ${1:-} in
inputs) printf '%s\n' "$here/go.mod" "$here/go.sum" "TAG=$TAG"; exit 0 ;;
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
# Without main.Version versitygw reports its version as "git".
CGO_ENABLED=0 go -C "$here" build -trimpath -ldflags "-s -w -X main.Version=$version" \
	-o "$tmp/versitygw" "$module/cmd/versitygw"

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
"${mkimage[@]}" --tag "$TAG" \
	--file "$tmp/versitygw:/usr/local/bin/versitygw:0755" \
	--entrypoint /usr/local/bin/versitygw \
	--user 65532:65532 \
	--expose 7070 \
	--output "$OUT"
