#!/usr/bin/env bash
# Builds the MatrixOne image (a docker-archive for `ctr images import`): the
# real mo-service of MatrixOne's Go module at VERSION, built here with cgo,
# and Steward's mo-agent (tools/mo-agent), both linked statically into one
# layer with no operating system under them.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from beyond this
#                      directory (hack/images.sh, which skips unchanged builds)
#   build.sh tag       print the image reference it builds
#
# mo-service needs MatrixOne's C library (libmo.a, from the module's cgo/
# folder), which is built into the cache on the first run; the Go build
# cache makes a rebuild with nothing changed a link only. A cold build took
# 6 minutes on 2 cores here (14 in an earlier trial; images/matrixone/README.md).
#
# Environment:
#   VERSION    MatrixOne's version to build (default: the VERSION file's);
#              another version is what an upgrade starts from
#   OUT        archive to write (default: _output/images/matrixone.tar, or
#              matrixone-<version>.tar for a VERSION other than the file's)
#   TAG        image reference(s), space separated; default
#              localhost/matrixone:<version>
#   CACHE_DIR  where libmo is built (default: .cache/images)
#   MKIMAGE    a prebuilt mkimage binary; default: `go run` it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
default_version=$(<"$here/VERSION")
version=${VERSION:-$default_version}
if [[ $version == "$default_version" ]]; then
	OUT=${OUT:-$repo/_output/images/matrixone.tar}
else
	OUT=${OUT:-$repo/_output/images/matrixone-$version.tar}
fi
CACHE_DIR=${CACHE_DIR:-$repo/.cache/images}
TAG=${TAG:-localhost/matrixone:$version}
module=github.com/matrixorigin/matrixone

log() { printf '[matrixone-image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case ${1:-} in
inputs)
	printf '%s\n' "$repo/tools/mo-agent" /etc/ssl/certs/ca-certificates.crt "TAG=$TAG" "GO=$(go env GOVERSION)"
	exit 0
	;;
tag) echo "$TAG"; exit 0 ;;
'') ;;
*) die "usage: $0 [inputs|tag]" ;;
esac

command -v gcc >/dev/null || die "gcc is needed: MatrixOne builds with cgo"
# make builds MatrixOne's C library; libc6-dev has the static C libraries
# the static link needs.
missing=()
command -v make >/dev/null || missing+=(make)
dpkg-query -W -f='${Status}' libc6-dev 2>/dev/null | grep -q 'install ok installed' || missing+=(libc6-dev)
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- MatrixOne's source and C library ---------------------------------------
src=$(go mod download -json "$module@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $src ]] || die "go mod download $module@v$version gave no source directory"
mkdir -p "$CACHE_DIR"
CACHE_DIR=$(cd "$CACHE_DIR" && pwd)
cgo=$CACHE_DIR/matrixone-$version-cgo
if [[ ! -f $cgo/libmo.a ]]; then
	log "building libmo from $module@v$version/cgo"
	rm -rf "$cgo.tmp" && cp -r "$src/cgo" "$cgo.tmp" && chmod -R u+w "$cgo.tmp"
	make -s -C "$cgo.tmp" libmo.a >&2
	rm -rf "$cgo" && mv "$cgo.tmp" "$cgo"
fi

# --- Binaries -----------------------------------------------------------------
# Static (glibc linked in, Go's own resolver and user lookup) so the image
# needs no root filesystem; tzdata is embedded for MatrixOne's time zones.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=1 CGO_CFLAGS="-I$cgo" CGO_LDFLAGS="-L$cgo -lmo -lm"
tags=netgo,osusergo,timetzdata
static='-linkmode external -extldflags -static'
vpkg=$module/pkg/version
start=$SECONDS
log "building mo-service $version (6 to 14 minutes on 2 cores from a cold Go cache)"
(cd "$src" && go build -trimpath -tags "$tags" \
	-ldflags "-s -w $static -X '$vpkg.Version=v$version' -X '$vpkg.GoVersion=$(go env GOVERSION)' -X '$vpkg.BranchName=v$version'" \
	-o "$tmp/mo-service" ./cmd/mo-service) 2> >(grep -Ev 'statically linked applications requires at runtime|: in function .(dlfcn_globallookup|Curl_parsenetrc|rd_getaddrinfo|BIO_gethostbyname|Curl_ipv4_resolve_r).:$' >&2)
log "mo-service built in $((SECONDS - start))s"
start=$SECONDS
# The agent's pure parts are tested before it goes into an image.
go -C "$repo/tools/mo-agent" test ./render/ ./identity/ ./sqlready/ ./backup/ >&2
go -C "$repo/tools/mo-agent" build -trimpath -tags "$tags" -ldflags "-s -w $static" -o "$tmp/mo-agent" . \
	2> >(grep -Ev 'statically linked applications requires at runtime|: in function .(dlfcn_globallookup|Curl_parsenetrc|rd_getaddrinfo|BIO_gethostbyname|Curl_ipv4_resolve_r).:$' >&2)
log "mo-agent built in $((SECONDS - start))s"
# The CN and proxy pods' readiness probe, run every few seconds: pure Go
# and small (mo-agent's MatrixOne packages take 50 MiB to initialise).
CGO_ENABLED=0 go -C "$repo/tools/mo-agent" build -trimpath -ldflags "-s -w" -o "$tmp/sql-ready" ./cmd/sql-ready

# --- Image --------------------------------------------------------------------
if [[ -n ${MKIMAGE:-} ]]; then
	mkimage=("$MKIMAGE")
else
	mkimage=(go -C "$repo/tools/localkube" run ./cmd/mkimage)
fi
tag_args=()
for t in $TAG; do tag_args+=(--tag "$t"); done
files=(--file "$tmp/mo-service:/mo-service:0755" --file "$tmp/mo-agent:/mo-agent:0755" --file "$tmp/sql-ready:/sql-ready:0755")
# Object storage over TLS needs the CA bundle (S3 shared storage).
ca=/etc/ssl/certs/ca-certificates.crt
[[ -f $ca ]] && files+=(--file "$ca:$ca:0644")

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
"${mkimage[@]}" "${tag_args[@]}" "${files[@]}" \
	--entrypoint /mo-agent \
	--user 65532:65532 \
	--expose 6001 --expose 32000 --expose 32001 --expose 32002 \
	--label org.opencontainers.image.title=matrixone \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.description="MatrixOne $version (mo-service built from its Go module) with Steward's mo-agent" \
	--output "$OUT"
log "image: $(du -h "$OUT" | cut -f1) ($OUT)"
