#!/bin/bash
# Run by build.sh inside the image's root filesystem (a chroot with /proc):
# starts a one-server ensemble through zk-run, as the image starts a server,
# with -XX:ArchiveClassesAtExit=ARCHIVE; once it leads and has answered
# srvr and the AdminServer's stat and voting_view (what the probes and the
# operator ask), stops it, and the JVM writes the classes it loaded.
#
#   cds-archive.sh ARCHIVE QUORUM_PORT ELECTION_PORT CLIENT_PORT ADMIN_PORT
#
# The ports are free loopback ports build.sh picked.
set -euo pipefail
(($# == 5)) || { echo "usage: $0 ARCHIVE QUORUM_PORT ELECTION_PORT CLIENT_PORT ADMIN_PORT" >&2; exit 2; }
archive=$1 quorum=$2 election=$3 client=$4 admin=$5
work=/tmp/cds
mkdir -p "$work/conf"
cat >"$work/conf/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$work/data
standaloneEnabled=false
reconfigEnabled=true
admin.serverAddress=127.0.0.1
admin.serverPort=$admin
server.1=127.0.0.1:$quorum:$election:participant;127.0.0.1:$client
CFG

# ask PORT TEXT: sends TEXT to the loopback PORT and prints the answer.
ask() { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && cat <&3; }
fail() { cat "$work/server.log" >&2; echo "cds-archive.sh: $*" >&2; exit 1; }

ZK_CONF_SRC=$work/conf ZK_CONF_DIR=$work/run ZK_MYID=1 ZK_DNS_WAIT=0 ZK_HEAP=64m \
	ZK_JVM_OPTS="-XX:ArchiveClassesAtExit=$archive" /usr/local/bin/zk-run server >"$work/server.log" 2>&1 &
server=$!
out=
for ((i = 0; i < 600; i++)); do
	if out=$( (ask "$client" srvr) 2>/dev/null) && [[ $out == *"Mode: leader"* ]]; then break; fi
	kill -0 "$server" 2>/dev/null || fail "the server exited"
	sleep 0.1
done
[[ $out == *"Mode: leader"* ]] || fail "the server did not lead within 60s"
# The AdminServer starts before the election, but a build on a busy machine
# once found its port refusing after the server led: each command is asked
# until it answers, and a server whose AdminServer never does fails the
# build with its log.
for command in stat voting_view; do
	for ((i = 0; i < 600; i++)); do
		if out=$( (ask "$admin" "GET /commands/$command HTTP/1.0"$'\r\n\r\n') 2>/dev/null) && [[ $out == *" 200 "* ]]; then break; fi
		kill -0 "$server" 2>/dev/null || fail "the server exited"
		sleep 0.1
	done
	[[ $out == *" 200 "* ]] || fail "the AdminServer did not answer $command within 60s"
done
kill -TERM "$server"
wait "$server" || true
[[ -s $archive ]] || fail "no archive written"
