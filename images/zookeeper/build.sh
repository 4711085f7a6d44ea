#!/usr/bin/env bash
# Builds the ZooKeeper image (a docker-archive for `ctr images import`) from
# Debian's packages, without a container engine or a registry:
#
#   1. mmdebstrap makes a trimmed Debian root filesystem tarball from the
#      Debian mirror and suite this machine's apt is configured with; it is
#      cached, keyed by everything that goes into it.
#   2. mkimage (tools/localkube/cmd/mkimage) stacks that tarball and zk-run
#      into an image with the contract described in README.md.
#
#   build.sh           build the image
#   build.sh inputs    print what the image is made from beyond this
#                      directory (hack/images.sh, which skips unchanged builds)
#   build.sh tag       print the image reference it builds
#
# VERSION holds the upstream ZooKeeper version the image must carry: the
# build fails when the suite's zookeeper package is another one, and the
# default tag is localhost/zookeeper:<VERSION>, the API's default image (a
# test in test/wiring compares them).
#
# Environment:
#   OUT        archive to write (default: _output/images/zookeeper.tar)
#   TAG        image reference(s), space separated; default
#              localhost/zookeeper:<VERSION>
#   CACHE_DIR  where root filesystems are cached (default: .cache/images)
#   MKIMAGE    a prebuilt mkimage binary; default: `go run` it
#   DEBIAN_MIRROR, DEBIAN_SUITE
#              override what is read from the apt sources
#
# Must run as root (mmdebstrap's root mode: maintainer scripts need chroot).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-$repo/_output/images/zookeeper.tar}
CACHE_DIR=${CACHE_DIR:-$repo/.cache/images}

log() { printf '[zookeeper-image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

version=$(<"$here/VERSION")
TAG=${TAG:-localhost/zookeeper:$version}

case ${1:-} in
inputs)
	# The apt sources decide the mirror and suite; the rest is this directory.
	printf '%s\n' /etc/apt/sources.list /etc/apt/sources.list.d \
		"TAG=$TAG" "DEBIAN_MIRROR=${DEBIAN_MIRROR:-}" "DEBIAN_SUITE=${DEBIAN_SUITE:-}"
	exit 0
	;;
tag) echo "$TAG"; exit 0 ;;
'') ;;
*) die "usage: $0 [inputs|tag]" ;;
esac

[[ $(id -u) == 0 ]] || die "run as root: mmdebstrap needs chroot for maintainer scripts"

# --- Where packages come from ------------------------------------------------
# The mirror is whatever this machine's apt already uses (a CI machine may
# only reach a local mirror), so it is read here, never written in the repo.
# The "main" Debian source is the first enabled deb stanza whose first suite
# is a plain release name: bookworm, not bookworm-updates or
# bookworm-security.
read_deb822() {
	awk '
		BEGIN { RS = ""; FS = "\n" }
		{
			types = ""; uris = ""; suites = ""; enabled = "yes"
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^[ \t]*#/) continue
				n = index($i, ":"); if (n == 0) continue
				key = tolower(substr($i, 1, n - 1))
				val = substr($i, n + 1); gsub(/^[ \t]+|[ \t]+$/, "", val)
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "suites") suites = val
				else if (key == "enabled") enabled = tolower(val)
			}
			split(uris, u, /[ \t]+/); split(suites, s, /[ \t]+/)
			if (enabled != "no" && (" " types " ") ~ / deb / && u[1] != "" && s[1] != "" && s[1] !~ /-/) {
				print u[1], s[1]; exit
			}
		}' "$1"
}

read_one_line() {
	# deb [arch=amd64 signed-by=...] URI SUITE COMPONENTS...
	sed -E -e 's/#.*//' -e 's/\[[^]]*\]//' "$1" |
		awk '$1 == "deb" && $3 !~ /-/ { print $2, $3; exit }'
}

find_source() {
	local f
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] && read_deb822 "$f" | grep . && return
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] && read_one_line "$f" | grep . && return
	done
	return 1
}

if [[ -z ${DEBIAN_MIRROR:-} || -z ${DEBIAN_SUITE:-} ]]; then
	src=$(find_source) || die "no Debian source found in /etc/apt; set DEBIAN_MIRROR and DEBIAN_SUITE"
	DEBIAN_MIRROR=${DEBIAN_MIRROR:-${src% *}}
	DEBIAN_SUITE=${DEBIAN_SUITE:-${src#* }}
fi
log "Debian suite $DEBIAN_SUITE from the configured mirror"

# --- Root filesystem ---------------------------------------------------------
# zookeeper Depends on default-jre, the full JRE with GTK, Mesa and LLVM
# (~300 MB) that a server never uses. This local, empty package Provides
# default-jre and Depends on the headless JRE instead, the way equivs does.
shim_control='Package: steward-jre-headless
Version: 1.0
Architecture: all
Maintainer: Steward <steward@localhost>
Priority: optional
Section: java
Depends: default-jre-headless
Provides: default-jre
Description: headless JRE standing in for default-jre
 Satisfies the zookeeper package'"'"'s dependency on default-jre with the
 headless JRE, which is all a ZooKeeper server needs.'

# zookeeper brings the jars; the rest are named because ZooKeeper's
# AdminServer needs them on the classpath (see zk-run), so their presence
# does not hinge on libzookeeper-java's dependency list. procps is for
# `kubectl exec ... ps`.
packages=(
	zookeeper
	default-jre-headless
	libjetty9-java
	libservlet-api-java
	libjackson2-databind-java
	libslf4j-java
	libdropwizard-metrics-java
	libcommons-cli-java
	libnetty-java
	procps
)

# Documentation, translations and maven metadata are dead weight in an
# image; copyright files stay, as Debian policy asks.
dpkg_opts=(
	'path-exclude=/usr/share/doc/*'
	'path-include=/usr/share/doc/*/copyright'
	'path-exclude=/usr/share/man/*'
	'path-exclude=/usr/share/info/*'
	'path-exclude=/usr/share/locale/*'
	'path-include=/usr/share/locale/locale.alias'
	'path-exclude=/usr/share/lintian/*'
	'path-exclude=/usr/share/maven-repo/*'
)

# Run after the essential packages, before ours ($1 is the root): the JRE's
# postinst registers its man page as an update-alternatives link and fails
# when the excluded man directory does not exist.
# shellcheck disable=SC2016 # "$1" is expanded by mmdebstrap's shell
essential_hook='mkdir -p "$1/usr/share/man/man1"'

# Run inside mmdebstrap after every package is installed ($1 is the root).
# The host's resolv.conf and hostname that mmdebstrap copies in must not leak
# into the image (the kubelet provides both), nor apt's state and sources
# (the build machine's mirror): the essential variant has no apt, and
# mmdebstrap's own apt cleanup is skipped since this removes it all.
# /conf and /data are the mount points of the image contract; /data is the
# zookeeper user's so the image also runs without a volume.
# shellcheck disable=SC2016
customize_hook='set -e
rm -f "$1/etc/resolv.conf" "$1/etc/hostname"
rm -rf "$1/etc/apt" "$1/var/lib/apt" "$1/var/cache/apt" "$1/var/log/apt"
rm -f "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old
mkdir -p "$1/conf" "$1/data"
chroot "$1" chown zookeeper:zookeeper /data
chmod 0750 "$1/data"'

mm_args=(
	--variant=essential
	--aptopt='Acquire::Languages "none"'
	--include="$(IFS=,; echo "${packages[*]}")"
	--essential-hook="$essential_hook"
	--customize-hook="$customize_hook"
	--skip=cleanup/apt --skip=cleanup/mmdebstrap
)
for o in "${dpkg_opts[@]}"; do mm_args+=(--dpkgopt="$o"); done

# Everything that decides the root filesystem's content goes into its name,
# so changing any of it builds anew and an unchanged recipe is reused.
key=$(printf '%s\n' "$DEBIAN_MIRROR" "$DEBIAN_SUITE" "$shim_control" "${mm_args[@]}" |
	sha256sum | cut -c1-16)
mkdir -p "$CACHE_DIR"
CACHE_DIR=$(cd "$CACHE_DIR" && pwd) # mkimage runs from another directory
rootfs=$CACHE_DIR/zookeeper-rootfs-$DEBIAN_SUITE-$key.tar

if [[ -f $rootfs ]]; then
	log "reusing cached root filesystem $rootfs"
else
	if ! command -v mmdebstrap >/dev/null; then
		log "installing mmdebstrap"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap
	fi
	work=$(mktemp -d "$CACHE_DIR/.build.XXXXXX")
	cleanup() {
		# mmdebstrap unmounts the shim .deb it bind-mounted into its
		# temporary root only when it succeeds.
		awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts |
			sort -r | xargs -r -n 1 umount -l
		rm -rf "$work"
	}
	trap cleanup EXIT
	mkdir -p "$work/shim/DEBIAN"
	printf '%s\n' "$shim_control" >"$work/shim/DEBIAN/control"
	dpkg-deb --root-owner-group --build "$work/shim" "$work/steward-jre-headless.deb" >/dev/null
	# The automount hook bind-mounts the .deb at its host path inside the
	# chroot, where dpkg opens it; mktemp's 0700 must not hide it.
	chmod 0755 "$work"

	# The shim goes first so apt has it when it resolves zookeeper's deps.
	mm_args=(
		--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount
		--include="$work/steward-jre-headless.deb"
		"${mm_args[@]}"
	)

	log "running mmdebstrap (a few minutes on a cold cache)"
	start=$SECONDS
	# Written under a temporary name: an interrupted run must not leave a
	# half tarball that the next run would take for a cached one.
	TMPDIR=$work mmdebstrap "${mm_args[@]}" "$DEBIAN_SUITE" "$work/rootfs.tar" "$DEBIAN_MIRROR"
	mv "$work/rootfs.tar" "$rootfs"
	log "mmdebstrap took $((SECONDS - start))s"
fi
log "root filesystem: $(du -h "$rootfs" | cut -f1) ($rootfs)"

# --- Image -------------------------------------------------------------------
# The dpkg database in the root filesystem says which ZooKeeper went in; the
# tag carries its upstream version (3.8.0-11+deb12u2 -> 3.8.0).
dpkg_status=$(tar -xOf "$rootfs" ./var/lib/dpkg/status)
zk_debversion=$(awk '/^Package: /{p=($2=="zookeeper")} p && /^Version: /{print $2; exit}' <<<"$dpkg_status")
[[ -n $zk_debversion ]] || die "zookeeper is not installed in $rootfs"
zk_version=${zk_debversion#*:}
zk_version=${zk_version%%-*}
[[ $zk_version == "$version" ]] ||
	die "the suite's zookeeper is $zk_version ($zk_debversion), images/zookeeper/VERSION says $version: update VERSION and the API's default image (api/zookeeper/v1alpha1)"
# The zookeeper package's postinst allocates its system user dynamically
# (the first free ids: 100, and 101 because base-passwd's "users" is 100).
# The operator's pod securityContext (fsGroup) depends on these numbers, so
# a package set that shifts them must fail here, not in a cluster.
zk_uid_expected=100:101
zk_uid=$(tar -xOf "$rootfs" ./etc/passwd | awk -F: '$1=="zookeeper"{print $3":"$4}')
[[ $zk_uid == "$zk_uid_expected" ]] ||
	die "zookeeper user is '$zk_uid', expected $zk_uid_expected: update README.md and the operator's securityContext"

# --- Class data sharing archive -----------------------------------------------
# A server is started once, inside the root filesystem, as the image starts
# it (zk-run, its classpath and options) plus -XX:ArchiveClassesAtExit:
# cds-archive.sh runs a one-server ensemble on loopback ports with its
# AdminServer until it leads and has answered what the probes and the
# operator ask, then stops it. The archive holds the classes it loaded,
# parsed and verified; zk-run maps them at every start (ZK_CDS_ARCHIVE). On a loaded 2-core machine a server served 0.5-0.6 s
# after its JVM started with it, 0.7-1.3 s without (docs/zookeeper.md).
cds=$(mktemp -d "$CACHE_DIR/.cds.XXXXXX")
cds_cleanup() {
	umount "$cds/root/proc" 2>/dev/null || true
	rm -rf "$cds"
	if declare -F cleanup >/dev/null; then cleanup; fi
}
trap cds_cleanup EXIT
log "making the class data sharing archive"
start=$SECONDS
mkdir -p "$cds/root"
tar -xf "$rootfs" -C "$cds/root"
install -m 0755 "$here/zk-run" "$cds/root/usr/local/bin/zk-run"
install -D -m 0644 "$here/java.security" "$cds/root/usr/local/etc/zookeeper/java.security"
mount -t proc proc "$cds/root/proc"
# Four free loopback ports (nothing answers on them), picked at random so
# that two builds, or a server of the host, do not collide, and below the
# kernel's ephemeral range (32768 and up), where a busy machine's outgoing
# connections could hold one by the time the server binds it.
ports=()
while ((${#ports[@]} < 4)); do
	p=$((20000 + RANDOM % 12768))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [[ " ${ports[*]} " != *" $p "* ]]; then
		ports+=("$p")
	fi
done
install -m 0755 "$here/cds-archive.sh" "$cds/root/tmp/cds-archive.sh"
chroot "$cds/root" /tmp/cds-archive.sh /tmp/zk.jsa "${ports[@]}" ||
	die "the server that makes the class data sharing archive failed"
cp "$cds/root/tmp/zk.jsa" "$cds/zk.jsa"
umount "$cds/root/proc"
log "archive of $(du -h "$cds/zk.jsa" | cut -f1) made in $((SECONDS - start))s"

tag_args=()
for t in $TAG; do tag_args+=(--tag "$t"); done

if [[ -n ${MKIMAGE:-} ]]; then
	mkimage=("$MKIMAGE")
else
	mkimage=(go -C "$repo/tools/localkube" run ./cmd/mkimage)
fi

case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
log "assembling $TAG (zookeeper $zk_debversion, user $zk_uid)"
start=$SECONDS
"${mkimage[@]}" \
	"${tag_args[@]}" \
	--layer "$rootfs" \
	--file "$here/zk-run:/usr/local/bin/zk-run:0755" \
	--file "$here/java.security:/usr/local/etc/zookeeper/java.security:0644" \
	--file "$cds/zk.jsa:/usr/local/share/zookeeper/zk.jsa:0644" \
	--entrypoint /usr/local/bin/zk-run \
	--user "$zk_uid" \
	--workdir /data \
	--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--env ZK_HEAP=512m \
	--expose 2181 --expose 2888 --expose 3888 --expose 8080 \
	--label org.opencontainers.image.title=zookeeper \
	--label org.opencontainers.image.version="$zk_debversion" \
	--label org.opencontainers.image.description="Apache ZooKeeper from Debian $DEBIAN_SUITE packages" \
	--output "$OUT"
log "mkimage took $((SECONDS - start))s"
log "image: $(du -h "$OUT" | cut -f1) ($OUT)"
