#!/usr/bin/env bash
# guardrails_test.sh: every guard rail in .golangci.yml (the depguard rules,
# importas, the gocognit bound) reports a deliberate violation, and what a
# rule allows stays unreported.
#
# It copies go.mod, go.sum, .golangci.yml, api/ and internal/ into a
# temporary directory, adds packages that break each rule (systems that do
# not exist yet are created there, so their rules are exercised too), runs
# golangci-lint with only the guard-rail linters on those packages and
# checks the report. The repository is not modified. About 15 s with a warm
# build cache.
#
#   test/lint/guardrails_test.sh          # uses bin/golangci-lint
#   GOLANGCI_LINT=/path/to/golangci-lint test/lint/guardrails_test.sh
#   VERBOSE=1 test/lint/guardrails_test.sh  # also prints golangci-lint's report
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
lint="${GOLANGCI_LINT:-$root/bin/golangci-lint}"
[[ -x "$lint" ]] || { echo "no golangci-lint at $lint; run 'make golangci-lint' or set GOLANGCI_LINT" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/go.mod" "$root/go.sum" "$root/.golangci.yml" "$root/api" "$root/internal" "$tmp/"

mod=github.com/stewardhq/steward
cr='_ "sigs.k8s.io/controller-runtime"'

# put FILE PACKAGE [IMPORT...] writes a Go file that imports each IMPORT (a
# quoted path, optionally preceded by an alias) and uses it. depguard sees
# blank imports (_ "path") too, so the rules are broken with those, needing
# no identifier of the imported package. The files are named
# guard_violation*.go so that none replaces a file of a package that exists
# by then (internal/oceanbase/build, internal/framework/standard, ...).
put() {
	local file="$tmp/$1" pkg="$2" imp name
	shift 2
	mkdir -p "$(dirname "$file")"
	{
		echo "// Package $pkg is a deliberate guard-rail violation."
		echo "package $pkg"
		for imp in "$@"; do echo "import $imp"; done
		for imp in "$@"; do
			[[ "$imp" == _* ]] && continue
			if [[ "$imp" == \"* ]]; then name="$(basename "${imp//\"/}")"; else name="${imp%% *}"; fi
			echo "var _ = $name.$(sym "$imp")"
		done
	} >"$file"
}

# sym IMPORT names an exported identifier of an imported package.
sym() {
	case "$1" in
	*'"sigs.k8s.io/controller-runtime"') echo Log ;;
	*'"k8s.io/api/core/v1"') echo NamespaceDefault ;;
	*'"k8s.io/apimachinery/pkg/apis/meta/v1"') echo NamespaceAll ;;
	*'"k8s.io/apimachinery/pkg/api/errors"') echo IsNotFound ;;
	*"/api/zookeeper/v1alpha1\"") echo GroupVersion ;;
	*) echo "sym: no identifier for $1" >&2; exit 2 ;;
	esac
}

# api/: only Kubernetes API packages, the standard library and api/; its
# tests are exempt.
put api/guard/v1/guard_violation.go v1 "$cr" '_ "k8s.io/client-go/rest"' "_ \"$mod/internal/version\"" \
	'_ "k8s.io/apimachinery/pkg/apis/meta/v1"' '_ "k8s.io/utils/ptr"' "_ \"$mod/api/zookeeper/v1alpha1\""
put api/guard/v1/guard_violation_test.go v1 "$cr"
# A system's API does not import another system's API.
put api/gpss/v1alpha1/guard_violation.go v1alpha1 "_ \"$mod/api/zookeeper/v1alpha1\""

# The framework imports no system.
put internal/framework/guard/guard_violation.go guard "_ \"$mod/api/zookeeper/v1alpha1\"" "_ \"$mod/internal/zookeeper/zkclient\""

# No system imports another (a ring over the four); a system's own
# packages are fine.
for s in zookeeper matrixone oceanbase gpss; do put "internal/$s/guardleaf/guard_violation.go" guardleaf; done
put internal/zookeeper/guard/guard_violation.go guard "_ \"$mod/internal/matrixone/guardleaf\"" "_ \"$mod/internal/zookeeper/guardleaf\""
put internal/matrixone/guard/guard_violation.go guard "_ \"$mod/internal/oceanbase/guardleaf\"" "_ \"$mod/api/zookeeper/v1alpha1\""
put internal/oceanbase/guard/guard_violation.go guard "_ \"$mod/internal/gpss/guardleaf\""
put internal/gpss/guard/guard_violation.go guard "_ \"$mod/internal/zookeeper/guardleaf\""

# Wire clients import no framework and no controller-runtime.
put internal/matrixone/moclient/guard_violation.go moclient "_ \"$mod/internal/framework\"" "$cr"

# Pure builders and internal/framework/standard import no controller-runtime;
# the builders' tests may.
put internal/oceanbase/build/guard_violation.go build "$cr"
put internal/oceanbase/build/guard_violation_test.go build "$cr"
put internal/framework/standard/guard_violation.go standard "$cr"

# importas: wrong aliases and a missing one.
put internal/guardimports/aliases.go guardimports 'core "k8s.io/api/core/v1"' '"k8s.io/apimachinery/pkg/api/errors"' \
	'controllerruntime "sigs.k8s.io/controller-runtime"' "zookeeperv1alpha1 \"$mod/api/zookeeper/v1alpha1\"" \
	'metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"'

# gocognit: one branch more than the bound allows.
bound="$(sed -n 's/^ *min-complexity: *\([0-9]*\).*/\1/p' "$tmp/.golangci.yml")"
[[ -n "$bound" ]] || { echo "no gocognit min-complexity in .golangci.yml" >&2; exit 2; }
{
	echo 'package guardimports'
	echo
	echo '// TooComplex has one branch more than the gocognit bound.'
	echo 'func TooComplex(x int) (n int) {'
	for ((i = 0; i <= bound; i++)); do printf '\tif x > %d {\n\t\tn++\n\t}\n' "$i"; done
	echo '	return n'
	echo '}'
} >"$tmp/internal/guardimports/complex.go"

out="$tmp/lint.out"
status=0
(cd "$tmp" && "$lint" run --allow-parallel-runners --enable-only depguard,importas,gocognit \
	--max-issues-per-linter 0 --max-same-issues 0 --output.text.print-issued-lines=false \
	./api/guard/v1 ./api/gpss/v1alpha1 ./internal/framework/guard ./internal/framework/standard \
	./internal/{zookeeper,matrixone,oceanbase,gpss}/guard ./internal/matrixone/moclient ./internal/oceanbase/build \
	./internal/guardimports) >"$out" 2>&1 || status=$?
if ((status != 0 && status != 1)); then
	cat "$out" >&2
	echo "golangci-lint failed (exit $status)" >&2
	exit 1
fi

failed=0
# expect FILE LINTER TEXT: a report of LINTER on FILE contains TEXT.
expect() {
	if ! grep -F "$1:" "$out" | grep -F "($2)" | grep -qF -- "$3"; then
		echo "FAIL: no $2 report on $1 containing: $3" >&2
		failed=1
	fi
}
# refute FILE TEXT: no report on FILE contains TEXT.
refute() {
	if grep -F "$1:" "$out" | grep -qF -- "$2"; then
		echo "FAIL: unexpected report on $1 containing: $2" >&2
		failed=1
	fi
}

f=api/guard/v1/guard_violation.go
expect $f depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'api-only-kubernetes-api'"
expect $f depguard "'k8s.io/client-go/rest' is not allowed from list 'api-only-kubernetes-api'"
expect $f depguard "'$mod/internal/version' is not allowed from list 'api-only-kubernetes-api'"
refute $f "k8s.io/apimachinery/pkg/apis/meta/v1'"
refute $f "k8s.io/utils/ptr"
refute $f "$mod/api/zookeeper/v1alpha1'"
refute api/guard/v1/guard_violation_test.go depguard
expect api/gpss/v1alpha1/guard_violation.go depguard "'$mod/api/zookeeper/v1alpha1' is not allowed from list 'gpss-imports-no-other-system'"

f=internal/framework/guard/guard_violation.go
expect $f depguard "'$mod/api/zookeeper/v1alpha1' is not allowed from list 'framework-imports-no-system'"
expect $f depguard "'$mod/internal/zookeeper/zkclient' is not allowed from list 'framework-imports-no-system'"

expect internal/zookeeper/guard/guard_violation.go depguard "'$mod/internal/matrixone/guardleaf' is not allowed from list 'zookeeper-imports-no-other-system'"
refute internal/zookeeper/guard/guard_violation.go "$mod/internal/zookeeper/guardleaf"
expect internal/matrixone/guard/guard_violation.go depguard "'$mod/internal/oceanbase/guardleaf' is not allowed from list 'matrixone-imports-no-other-system'"
expect internal/matrixone/guard/guard_violation.go depguard "'$mod/api/zookeeper/v1alpha1' is not allowed from list 'matrixone-imports-no-other-system'"
expect internal/oceanbase/guard/guard_violation.go depguard "'$mod/internal/gpss/guardleaf' is not allowed from list 'oceanbase-imports-no-other-system'"
expect internal/gpss/guard/guard_violation.go depguard "'$mod/internal/zookeeper/guardleaf' is not allowed from list 'gpss-imports-no-other-system'"

f=internal/matrixone/moclient/guard_violation.go
expect $f depguard "'$mod/internal/framework' is not allowed from list 'wire-client-imports-no-framework'"
expect $f depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'wire-client-imports-no-framework'"

expect internal/oceanbase/build/guard_violation.go depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'builders-import-no-controller-runtime'"
refute internal/oceanbase/build/guard_violation_test.go depguard
expect internal/framework/standard/guard_violation.go depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'builders-import-no-controller-runtime'"

f=internal/guardimports/aliases.go
expect $f importas '"k8s.io/api/core/v1" imported as "core" but must be "corev1"'
expect $f importas '"k8s.io/apimachinery/pkg/api/errors" imported without alias but must be with alias "apierrors"'
expect $f importas '"sigs.k8s.io/controller-runtime" imported as "controllerruntime" but must be "ctrl"'
expect $f importas "\"$mod/api/zookeeper/v1alpha1\" imported as \"zookeeperv1alpha1\" but must be \"zkv1\""
refute $f '"k8s.io/apimachinery/pkg/apis/meta/v1"'
expect internal/guardimports/complex.go gocognit "cognitive complexity $((bound + 1)) of func \`TooComplex\` is high (> $bound)"

if grep -qF '(typecheck)' "$out"; then
	echo "FAIL: the violation files do not compile" >&2
	failed=1
fi
if ((failed)) || [[ -n "${VERBOSE:-}" ]]; then
	echo "--- golangci-lint output:" >&2
	cat "$out" >&2
fi
((failed == 0)) || exit 1
echo "ok: every guard rail reported its violation ($(grep -cE '\((depguard|importas|gocognit)\)$' "$out") reports)"
