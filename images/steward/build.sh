#!/usr/bin/env bash
# Builds the operator's image (a docker-archive for `ctr images import`): one
# layer holding the static steward binary that `make build` writes, run as a
# numeric non-root user. docs/images.md describes it.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from (hack/images.sh)
#   build.sh tag       print the image reference it builds
#
# Environment:
#   OUT          archive to write (default: _output/images/steward.tar)
#   TAG          image reference(s), space separated (default: localhost/steward:dev)
#   STEWARD_BIN  the binary (default: bin/steward)
#   MKIMAGE      a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-$repo/_output/images/steward.tar}
TAG=${TAG:-localhost/steward:dev}
STEWARD_BIN=${STEWARD_BIN:-$repo/bin/steward}
case $STEWARD_BIN in /*) ;; *) STEWARD_BIN=$PWD/$STEWARD_BIN ;; esac

case ${1:-} in
inputs) printf '%s\n' "$STEWARD_BIN" "TAG=$TAG"; exit 0 ;;
tag) echo "$TAG"; exit 0 ;;
'') ;;
*) echo "usage: $0 [inputs|tag]" >&2; exit 2 ;;
esac

[[ -x $STEWARD_BIN ]] || { echo "no $STEWARD_BIN: run make build" >&2; exit 1; }

if [[ -n ${MKIMAGE:-} ]]; then
	mkimage=("$MKIMAGE")
else
	mkimage=(go -C "$repo/tools/localkube" run ./cmd/mkimage)
fi
tag_args=()
for t in $TAG; do tag_args+=(--tag "$t"); done

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
"${mkimage[@]}" "${tag_args[@]}" \
	--file "$STEWARD_BIN:/steward:0755" \
	--entrypoint /steward \
	--user 65532:65532 \
	--output "$OUT"
