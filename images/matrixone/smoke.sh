#!/usr/bin/env bash
# Smoke test of the MatrixOne image without Kubernetes: unpack the archive's
# layer, then run its binaries as the image's user on 127.0.0.1 the way the
# operator's pods will — one process per role (log service, TN, CN, proxy),
# each started by `mo-agent run` from the configuration template the
# operator renders (internal/matrixone/build/testdata, moved onto loopback)
# — plus `mo-agent probe`. Passes when
#   - SQL through the proxy creates a table, inserts and reads rows back,
#   - the probe's /v1/cluster says HAKeeper is running, the log shards have
#     a leader, and the TN, the CN (Working) and the proxy are known,
#   - every store runs as the UUID `mo-agent store-id` derives from its
#     "pod" name,
#   - mo_ctl sets the CN Draining and Working again, and the probe reports
#     each state.
#
# Environment:
#   IMAGE     the docker-archive to test (default _output/images/matrixone.tar)
#   TIMEOUT   seconds to wait for SQL through the proxy (default 180)
#   KEEP      1 keeps the work directory (logs, data) for a look afterwards
#   VIEW_FILE also write the probe's last answer there (the operator's tests
#             keep one as testdata)
#
# Must run as root (to run as the image's user). Uses the ports 6001,
# 7070, 16001, 17001-17004, 18000-18003, 41010-41013 and 32000-32002 on 127.0.0.1, and
# stops every process it started.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
IMAGE=${IMAGE:-$repo/_output/images/matrixone.tar}
TIMEOUT=${TIMEOUT:-180}

log() { printf '[matrixone-smoke] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root"
[[ -f $IMAGE ]] || die "no image at $IMAGE (run images/matrixone/build.sh)"
for tool in jq curl; do
	if ! command -v "$tool" >/dev/null; then
		log "installing $tool"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tool" >/dev/null
	fi
done
for port in 6001 7070 16001 18000 41010 32000 32001 32002; do
	! ss -Hltn "( sport = :$port )" | grep -q . || die "port $port is in use"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mo-smoke.XXXXXX")
chmod 0755 "$tmp"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	sleep 2
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ ${KEEP:-} == 1 ]]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# --- Unpack ---------------------------------------------------------------------
mkdir -p "$tmp/archive" "$tmp/root"
tar -xf "$IMAGE" -C "$tmp/archive"
manifest=$tmp/archive/manifest.json
config=$tmp/archive/$(jq -r '.[0].Config' "$manifest")
jq -r '.[0].Layers[]' "$manifest" | while read -r layer; do
	tar -xf "$tmp/archive/$layer" -C "$tmp/root" --numeric-owner
done
user=$(jq -r '.config.User // ""' "$config")
[[ -n $user && ${user%%:*} != 0 ]] || die "image user is '$user', want a non-root uid"
agent=$tmp/root/mo-agent
log "image $(jq -r '.[0].RepoTags | join(" ")' "$manifest"), user $user"

# --- Templates: the operator's own -----------------------------------------------
# internal/matrixone/build renders these files (its golden test keeps them
# current) for a cluster "mo" in namespace default. Only what differs on one
# host moves: the pods' DNS names become 127.0.0.1, the volume and the shared
# mount become directories here, and the CN's SQL and port base move off the
# proxy's 6001.
ns=default
golden=$repo/internal/matrixone/build/testdata
log_uuid=$("$agent" store-id $ns mo-log-0)
mkdir -p "$tmp/conf" "$tmp/shared" "$tmp"/{log,tn,cn,proxy}
metrics=17000 # each role's Prometheus metrics port: 17001 to 17004
for role in log tn cn proxy; do
	metrics=$((metrics + 1))
	sed -E \
		-e "s|^statusPort = 7001$|statusPort = $metrics|" \
		-e "s|/var/lib/matrixone-shared|$tmp/shared|g" \
		-e "s|/var/lib/matrixone|$tmp/$role|g" \
		-e 's/(\$\{POD_NAME\}|mo-[a-z]+-0)\.mo-[a-z]+\.default\.svc/127.0.0.1/g' \
		"$golden/$role.toml" >"$tmp/conf/$role.toml"
done
sed -i -e 's/^port-base = 6002$/port-base = 18000/' -e 's/^port = 6001$/port = 16001/' \
	-e 's/:6001"$/:16001"/' "$tmp/conf/cn.toml"
grep -q "$log_uuid" "$tmp/conf/log.toml" || die "the log template's initial member is not $log_uuid (mo-log-0's store)"
chown -R "$user" "$tmp/shared" "$tmp"/{log,tn,cn,proxy}

# --- Run ----------------------------------------------------------------------
start_role() { # $1 role, $2 GOMEMLIMIT
	log "starting $1"
	env -i PATH=/usr/bin:/bin GOMEMLIMIT="$2" POD_NAME="mo-$1-0" POD_NAMESPACE=$ns POD_IP=127.0.0.1 \
		timeout --kill-after=10 $((TIMEOUT + 300)) \
		setpriv --reuid="${user%%:*}" --regid="${user##*:}" --clear-groups \
		"$agent" run --mo-service "$tmp/root/mo-service" --dir "$tmp/$1" "$tmp/conf/$1.toml" >"$tmp/$1.log" 2>&1 &
	pids+=($!)
}
fail() {
	local f
	for f in "$tmp"/*.log; do
		log "$(basename "$f"), last lines:"
		tail -n 15 "$f" | sed 's/^/    /' >&2
	done
	die "$*"
}
start=$SECONDS
start_role log 256MiB
sleep 3
start_role tn 768MiB
sleep 3
start_role cn 768MiB
start_role proxy 128MiB
timeout --kill-after=5 $((TIMEOUT + 300)) \
	setpriv --reuid="${user%%:*}" --regid="${user##*:}" --clear-groups \
	"$agent" probe --listen 127.0.0.1:7070 --hakeeper 127.0.0.1:32001 >"$tmp/probe.log" 2>&1 &
pids+=($!)

sql() { go -C "$repo" run ./test/e2e/smoke sql --server 127.0.0.1:6001 --user root --password 111 "$1"; }
until sql "select 1" >/dev/null 2>&1; do
	((SECONDS - start < TIMEOUT)) || fail "no SQL through the proxy after ${TIMEOUT}s"
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process exited"; done
	sleep 2
done
log "SQL through the proxy after $((SECONDS - start))s"
sql "create database if not exists smoke" >/dev/null
sql "create table smoke.t (id int primary key, v varchar(20))" >/dev/null
sql "insert into smoke.t values (1, 'one'), (2, 'two')" >/dev/null
rows=$(sql "select id, v from smoke.t order by id")
[[ $rows == $'1\tone\n2\ttwo' ]] || fail "read back: $rows"
log "a table written and read back through the proxy"

view=""
until view=$(curl -fsS --max-time 5 http://127.0.0.1:7070/v1/cluster) &&
	[[ $(jq -r '[.cnStores[] | select(.workState == "Working")] | length' <<<"$view") == 1 &&
		$(jq '.proxyStores | length' <<<"$view") == 1 ]]; do
	((SECONDS - start < TIMEOUT + 60)) || fail "the probe's view is incomplete: ${view:-no answer}"
	sleep 2
done
check() { [[ $(jq -r "$1" <<<"$view") == "$2" ]] || fail "probe: $1 is $(jq -c "$1" <<<"$view"), want $2 in $view"; }
check .state HAKeeperRunning
check '[.logShards[] | select(.leaderID != 0)] | length' "$(jq '.logShards | length' <<<"$view")"
check '.logStores[0].uuid' "$log_uuid"
check '.logStores[0].state' NormalState
check '.tnStores[0].uuid' "$("$agent" store-id $ns mo-tn-0)"
check '.cnStores[0].uuid' "$("$agent" store-id $ns mo-cn-0)"
check '.proxyStores[0].uuid' "$("$agent" store-id $ns mo-proxy-0)"
log "the probe's view: $(jq -c '{state, logShards: [.logShards[] | {shardID, leaderID, replicas: (.replicas | length)}], stores: {log: (.logStores | length), tn: (.tnStores | length), cn: (.cnStores | length), proxy: (.proxyStores | length)}}' <<<"$view")"
[[ -z ${VIEW_FILE:-} ]] || jq . <<<"$view" >"$VIEW_FILE"

# A CN's work state through SQL, as the operator will drain one: mo_ctl
# asks HAKeeper to change it, and the probe sees the change. The statements
# go to the CN itself, not through the proxy, which routes new sessions to
# Working CNs only.
cn_uuid=$("$agent" store-id $ns mo-cn-0)
cn_sql() { go -C "$repo" run ./test/e2e/smoke sql --server 127.0.0.1:16001 --user root --password 111 "$1"; }
work_state() { # $1: the state the probe must report for the CN
	local deadline=$((SECONDS + 60)) got=""
	until got=$(curl -fsS --max-time 5 http://127.0.0.1:7070/v1/cluster |
		jq -r --arg u "$cn_uuid" '.cnStores[] | select(.uuid == $u) | .workState') && [[ $got == "$1" ]]; do
		((SECONDS < deadline)) || fail "the probe reports the CN ${got:-nowhere}, want $1 after mo_ctl"
		sleep 1
	done
}
cn_sql "select mo_ctl('cn', 'workstate', '$cn_uuid:2')" >/dev/null
work_state Draining
log "mo_ctl set the CN Draining; the probe reports it"
cn_sql "select mo_ctl('cn', 'workstate', '$cn_uuid:1')" >/dev/null
work_state Working
until sql "select count(*) from smoke.t" >/dev/null 2>&1; do
	((SECONDS - start < TIMEOUT + 120)) || fail "no SQL through the proxy once the CN works again"
	sleep 1
done
log "mo_ctl set it Working again; SQL through the proxy again"
log "PASS in $((SECONDS - start))s"
