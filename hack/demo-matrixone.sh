#!/usr/bin/env bash
# The MatrixOne demo (make demo-matrixone): on the local cluster, with
# Steward installed with the chart's defaults (MatrixOne among them), the
# sample MatrixOneCluster on real MatrixOne: three log stores, a TN, two CNs and a
# proxy, its shared storage on S3: the sample BucketClaim, a prefix of a
# bucket of versitygw, the S3 server started in the cluster by
# hack/versitygw.sh (as the e2e suite starts it), whose root keys are
# copied into the Secret s3-keys the claim names. It waits until the
# cluster is Ready, then connects with a MySQL client (Debian's, installed
# when missing) through a port-forward to the proxy's Service, as root with
# the generated password, and writes and reads a row. About 3.7 GiB of
# memory.
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-.cache/localkube/bin/kubectl}
ns=${NAMESPACE:-default}

KUBECTL=$kubectl hack/versitygw.sh
key() { "$kubectl" -n steward-s3 get secret versitygw-root -o jsonpath="{.data.$1}" | base64 -d; }
"$kubectl" -n "$ns" create secret generic s3-keys --dry-run=client -o yaml \
	--from-literal=AWS_ACCESS_KEY_ID="$(key AWS_ACCESS_KEY_ID)" \
	--from-literal=AWS_SECRET_ACCESS_KEY="$(key AWS_SECRET_ACCESS_KEY)" | "$kubectl" apply -f -
"$kubectl" -n "$ns" apply -f config/samples/matrixone_v1alpha1_bucketclaim.yaml
# The sample cluster, its shared storage the claim instead of the sample's
# filesystem claim.
cluster=$(sed '/^    fileSystem:$/,/^      size: /c\    bucketClaim: matrixone-data' config/samples/matrixone_v1alpha1_matrixonecluster.yaml)
grep -q 'bucketClaim: matrixone-data' <<<"$cluster" || { echo "the sample MatrixOneCluster's sharedStorage changed: update $0" >&2; exit 1; }
"$kubectl" -n "$ns" apply -f - <<<"$cluster"
"$kubectl" -n "$ns" wait matrixonecluster/matrixone --for=condition=Ready --timeout=10m
"$kubectl" -n "$ns" get matrixonecluster,logset,tnset,cnset,proxyset,bucketclaim,pods -o wide

if ! command -v mysql >/dev/null; then
	echo "Installing Debian's MySQL client"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq default-mysql-client >/dev/null
fi
secret=$("$kubectl" -n "$ns" get matrixonecluster/matrixone -o jsonpath='{.status.rootPasswordSecret}')
password=$("$kubectl" -n "$ns" get secret "$secret" -o jsonpath='{.data.password}' | base64 -d)
"$kubectl" -n "$ns" port-forward service/matrixone-proxy 16001:6001 >/dev/null &
forward=$!
trap 'kill $forward 2>/dev/null || true' EXIT
for _ in $(seq 30); do
	if mysql -h 127.0.0.1 -P 16001 -u root -p"$password" -e 'select 1' >/dev/null 2>&1; then break; fi
	sleep 1
done
echo; echo "SQL through the proxy (mysql -h 127.0.0.1 -P 16001 -u root, password in Secret $secret):"
mysql -h 127.0.0.1 -P 16001 -u root -p"$password" -t -e "
select version();
create database if not exists demo;
create table if not exists demo.greetings (at datetime, said varchar(64));
insert into demo.greetings values (now(), 'hello from Steward');
select * from demo.greetings;"
echo
echo "MatrixOne is Ready. Connect yourself with:"
echo "  $kubectl -n $ns port-forward service/matrixone-proxy 16001:6001 &"
echo "  mysql -h 127.0.0.1 -P 16001 -u root -p\"\$($kubectl -n $ns get secret $secret -o jsonpath='{.data.password}' | base64 -d)\""
