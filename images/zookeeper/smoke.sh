#!/usr/bin/env bash
# Smoke test of the ZooKeeper image without Kubernetes or a container
# runtime: unpack the image archive's layers into a temporary root, then run
# its entrypoint the way a runtime would (the image's user, environment and
# working directory; private PID, mount and UTS namespaces; the host network)
# with a standalone zoo.cfg bound to 127.0.0.1 only. Passes when
#   - GET /commands/stat on the AdminServer says server_state "standalone",
#   - the ruok four-letter word answers imok on the client port,
#   - myid was derived from the host name's ordinal (smoke-0 -> 1),
#   - the JVM, as PID 1 of its namespace, stops cleanly on SIGTERM.
#
# Environment:
#   IMAGE     the docker-archive to test (default _output/images/zookeeper.tar)
#   TIMEOUT   seconds to wait for the server to answer (default 120)
#   LOG_FILE  also keep the server's output there (a CI artifact)
#
# Must run as root (chroot, namespaces, mounts). Leaves nothing behind: the
# mounts live in a private mount namespace and the root is deleted.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
IMAGE=${IMAGE:-$repo/_output/images/zookeeper.tar}
TIMEOUT=${TIMEOUT:-120}

log() { printf '[zookeeper-smoke] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root"
[[ -f $IMAGE ]] || die "no image at $IMAGE (run images/zookeeper/build.sh)"
for tool in jq curl; do
	if ! command -v "$tool" >/dev/null; then
		log "installing $tool"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tool" >/dev/null
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zk-smoke.XXXXXX")
server_pid=""
runner_pid=""
cleanup() {
	local p
	for p in $server_pid $runner_pid; do kill -KILL "$p" 2>/dev/null || true; done
	[[ -z $runner_pid ]] || wait "$runner_pid" 2>/dev/null || true
	if [[ -n ${LOG_FILE:-} && -f $tmp/server.log ]]; then cp "$tmp/server.log" "$LOG_FILE"; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- Unpack the image as a runtime would --------------------------------------
mkdir -p "$tmp/archive" "$tmp/root"
tar -xf "$IMAGE" -C "$tmp/archive"
manifest=$tmp/archive/manifest.json
config=$tmp/archive/$(jq -r '.[0].Config' "$manifest")
# Our images have no whiteouts, so unpacking the layers in order is the
# whole story.
jq -r '.[0].Layers[]' "$manifest" | while read -r layer; do
	tar -xf "$tmp/archive/$layer" -C "$tmp/root" --numeric-owner
done

user=$(jq -r '.config.User // ""' "$config")
workdir=$(jq -r '.config.WorkingDir // "/"' "$config")
mapfile -t entrypoint < <(jq -r '.config.Entrypoint // [] | .[]' "$config")
mapfile -t cmd < <(jq -r '.config.Cmd // [] | .[]' "$config")
mapfile -t env < <(jq -r '.config.Env // [] | .[]' "$config")
[[ -n $user && ${user%%:*} != 0 && ${user%%:*} != root ]] || die "image user is '$user', want a non-root uid"
[[ ${#entrypoint[@]} -gt 0 ]] || die "image has no entrypoint"
log "image $(jq -r '.[0].RepoTags | join(" ")' "$manifest"), user $user, entrypoint ${entrypoint[*]}"

# --- Config, laid out like a ConfigMap volume ----------------------------------
free_port() {
	local p
	for _ in {1..100}; do
		p=$((20000 + RANDOM % 12768)) # below the ephemeral range (32768 and up)
		if [[ $p != "${client_port:-}" ]] && ! ss -Hltn "( sport = :$p )" | grep -q .; then
			echo "$p"
			return
		fi
	done
	return 1
}
client_port=$(free_port)
admin_port=$(free_port)

ts=..2000_01_01_00_00_00.000000000
mkdir -p "$tmp/root/conf/$ts"
cat >"$tmp/root/conf/$ts/zoo.cfg" <<EOF
tickTime=2000
dataDir=/data
clientPort=$client_port
clientPortAddress=127.0.0.1
admin.serverAddress=127.0.0.1
admin.serverPort=$admin_port
EOF
ln -s "$ts" "$tmp/root/conf/..data"
ln -s ..data/zoo.cfg "$tmp/root/conf/zoo.cfg"
# The kubelet provides /etc/hosts; without it the JVM's host name lookups
# would go to DNS.
printf '127.0.0.1\tlocalhost\n127.0.0.1\tsmoke-0\n' >"$tmp/root/etc/hosts"

# --- Run ---------------------------------------------------------------------
# Inside fresh namespaces: /proc for the new PID namespace, a /dev with only
# the usual character devices, a pod-like host name; then the entrypoint as
# the image's user. exec all the way, so the JVM is PID 1.
# shellcheck disable=SC2016 # expanded by the inner bash
inner='set -e
root=$1; user=$2; workdir=$3; shift 3
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
for d in null zero full random urandom; do
	touch "$root/dev/$d"
	mount --bind "/dev/$d" "$root/dev/$d"
done
ln -s /proc/self/fd "$root/dev/fd"
hostname smoke-0
exec chroot --userspec="$user" "$root" /usr/bin/env -i --chdir="$workdir" "$@"'

log "starting ZooKeeper: client 127.0.0.1:$client_port, admin 127.0.0.1:$admin_port"
start=$SECONDS
# timeout bounds the server's life even if this script is killed outright.
timeout --kill-after=10 $((TIMEOUT + 60)) \
	unshare --pid --mount --uts --fork --kill-child \
	bash -c "$inner" inner "$tmp/root" "$user" "$workdir" "${env[@]}" "${entrypoint[@]}" "${cmd[@]}" \
	>"$tmp/server.log" 2>&1 &
runner_pid=$!

fail() {
	log "server output:"
	sed 's/^/    /' "$tmp/server.log" >&2 || true
	die "$*"
}

stat_url=http://127.0.0.1:$admin_port/commands/stat
state=""
while ((SECONDS - start < TIMEOUT)); do
	kill -0 "$runner_pid" 2>/dev/null || fail "server exited"
	if stat=$(curl -fsS --max-time 2 "$stat_url" 2>/dev/null); then
		state=$(jq -r '.server_stats.server_state // empty' <<<"$stat")
		[[ -n $state ]] && break
	fi
	sleep 0.5
done
[[ -n $state ]] || fail "no server_state from $stat_url within ${TIMEOUT}s"
log "GET /commands/stat after $((SECONDS - start))s: $(jq -c '{command, server_state: .server_stats.server_state, version: .version, client_response}' <<<"$stat")"
passed=0
[[ $state == standalone ]] || fail "server_state is $state, want standalone"
passed=$((passed + 1))

exec 3<>"/dev/tcp/127.0.0.1/$client_port"
printf ruok >&3
ruok=$(timeout 5 cat <&3 || true)
exec 3<&-
log "ruok on the client port: $ruok"
[[ $ruok == imok ]] || fail "ruok answered '$ruok'"
passed=$((passed + 1))

myid=$(tr -d '[:space:]' <"$tmp/root/data/myid" 2>/dev/null || true)
log "myid derived from host name smoke-0: $myid"
[[ $myid == 1 ]] || fail "myid is '$myid', want 1"
passed=$((passed + 1))

# The server is the child of unshare's child (timeout -> unshare -> JVM).
unshare_pid=$(pgrep -P "$runner_pid" | head -n 1)
server_pid=$(pgrep -P "$unshare_pid" | head -n 1)
[[ -n $server_pid ]] || fail "cannot find the server process"
log "stopping the JVM (host pid $server_pid, PID 1 inside) with SIGTERM"
kill -TERM "$server_pid"
stop=$SECONDS
rc=0
wait "$runner_pid" || rc=$?
runner_pid=""
server_pid=""
# PID 1 of a namespace only receives the signals it installed a handler for,
# so ending on SIGTERM (143 = 128 + 15) shows the JVM handles it as PID 1.
log "server exited with status $rc after $((SECONDS - stop))s"
[[ $rc == 143 ]] || fail "server exit status $rc after SIGTERM, want 143"
passed=$((passed + 1))

log "last server log lines:"
tail -n 3 "$tmp/server.log" | sed 's/^/    /' >&2
echo "zookeeper-smoke: $passed passed, 0 failed"
