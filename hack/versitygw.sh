#!/usr/bin/env bash
# Starts versitygw, the local cluster's S3 server (hack/versitygw.yaml), on
# the cluster KUBECONFIG names, and waits until it serves: the one way the
# e2e suite, make demo-matrixone and the benchmarks start it. Idempotent: a
# second run changes nothing, and the root credentials, generated on the
# first, stay (Secret steward-s3/versitygw-root, keys AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY). Its image (make images IMAGES=versitygw, or SYSTEMS
# naming matrixone) must be loaded.
#
# Environment:
#   KUBECTL  the kubectl to run (default: .cache/localkube/bin/kubectl)
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-.cache/localkube/bin/kubectl}
ns=steward-s3

# The Secret first, so that the pod starts with it.
"$kubectl" create namespace "$ns" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
if ! "$kubectl" -n "$ns" get secret versitygw-root >/dev/null 2>&1; then
	# 20 and 40 characters, as AWS's keys have; from the kernel's CSPRNG.
	random() { head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F | head -c "$1"; }
	"$kubectl" -n "$ns" create secret generic versitygw-root \
		--from-literal=AWS_ACCESS_KEY_ID="$(random 20)" \
		--from-literal=AWS_SECRET_ACCESS_KEY="$(random 40)" >/dev/null
fi
"$kubectl" apply -f hack/versitygw.yaml >/dev/null
"$kubectl" -n "$ns" rollout status statefulset/versitygw --timeout=3m >/dev/null
echo "versitygw serves at http://versitygw.$ns.svc:7070 (region us-east-1, path-style; keys in Secret $ns/versitygw-root)"
