#!/usr/bin/env bash
# guardrails_test.sh: every guard rail in .golangci.yml (each depguard rule,
# importas, the gocognit bound) reports a deliberate violation, and what a
# rule allows stays unreported.
#
# It copies go.mod, go.sum, .golangci.yml, api/, internal/, cmd/,
# hack/lintgen and tools/mo-agent/wire into a temporary directory, adds a fifth system there
# (guardfive: an API, a controller, a builder, a wire client and a
# simulator, with no entry in .golangci.yml) and regenerates the depguard
# rules with hack/lintgen, as make manifests would. Then it adds packages
# that break each rule, for every system, wire client, builder and testing
# package the tree has, runs golangci-lint with only the guard-rail linters
# on those packages and checks the report; a depguard rule that reports
# nothing fails the test. The repository is not modified. About 20 s with a
# warm build cache.
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
cp -r "$root/go.mod" "$root/go.sum" "$root/.golangci.yml" "$root/api" "$root/internal" "$root/cmd" "$tmp/"
mkdir -p "$tmp/hack" "$tmp/tools/mo-agent"
cp -r "$root/hack/lintgen" "$tmp/hack/"
cp -r "$root/tools/mo-agent/wire" "$tmp/tools/mo-agent/" # go.mod's replace

mod=github.com/stewardhq/steward
cr='_ "sigs.k8s.io/controller-runtime"'

# pkgs are the packages put wrote into, for golangci-lint.
pkgs=()

# put FILE PACKAGE [IMPORT...] writes a Go file that imports each IMPORT (a
# quoted path, optionally preceded by an alias) and uses it. depguard sees
# blank imports (_ "path") too, so the rules are broken with those, needing
# no identifier of the imported package. The files are named
# guard_violation*.go so that none replaces a file of a package that exists
# by then (internal/oceanbase/build, internal/framework/standard, ...).
# MARKER, when set, ends the package comment (a +steward:role marker).
put() {
	local file="$tmp/$1" pkg="$2" dir="./${1%/*}" imp name
	shift 2
	mkdir -p "$(dirname "$file")"
	{
		echo "// Package $pkg is a deliberate guard-rail violation."
		[[ -z "${MARKER:-}" ]] || printf '//\n// %s\n' "$MARKER"
		echo "package $pkg"
		for imp in "$@"; do echo "import $imp"; done
		for imp in "$@"; do
			[[ "$imp" == _* ]] && continue
			if [[ "$imp" == \"* ]]; then name="$(basename "${imp//\"/}")"; else name="${imp%% *}"; fi
			echo "var _ = $name.$(sym "$imp")"
		done
	} >"$file"
	[[ " ${pkgs[*]} " == *" $dir "* ]] || pkgs+=("$dir")
}

# pkgname DIR is the name of the Go package in DIR of the copy.
pkgname() { sed -n 's/^package \([a-z0-9_]*\).*/\1/p' "$tmp/$1"/*.go | grep -v _test | head -1; }

# withrole ROLE lists the packages under internal/<system>/ whose marker
# says ROLE, as directories of the copy.
withrole() {
	(cd "$tmp" && grep -lE "^// \+steward:role=$1\$" internal/*/*/*.go | grep -v _test.go | xargs -r dirname | sort -u)
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

# A fifth system, written as adding-a-system.md says and added to no
# list: hack/lintgen must cover it.
put api/guardfive/v1alpha1/doc.go v1alpha1
put internal/guardfive/doc.go guardfive
MARKER=+steward:role=builder put internal/guardfive/build/doc.go build
MARKER=+steward:role=client put internal/guardfive/guardfiveclient/doc.go guardfiveclient
MARKER=+steward:role=testing put internal/guardfive/guardfivesim/doc.go guardfivesim
(cd "$tmp" && go run ./hack/lintgen) || { echo "hack/lintgen failed on the tree with a fifth system" >&2; exit 1; }
grep -q '^        guardfive-imports-no-other-system:$' "$tmp/.golangci.yml" ||
	{ echo "FAIL: hack/lintgen wrote no rule for the fifth system" >&2; exit 1; }
mapfile -t systems < <(cd "$tmp/api" && ls -d */ | tr -d / | grep -vx common)

# api/: only Kubernetes API packages, the standard library and api/; its
# tests are exempt. (After lintgen: api/guard is no system.)
put api/guard/v1/guard_violation.go v1 "$cr" '_ "k8s.io/client-go/rest"' "_ \"$mod/internal/version\"" \
	'_ "k8s.io/apimachinery/pkg/apis/meta/v1"' '_ "k8s.io/utils/ptr"' "_ \"$mod/api/zookeeper/v1alpha1\""
put api/guard/v1/guard_violation_test.go v1 "$cr"
# A system's API does not import another system's API.
put api/gpss/v1alpha1/guard_violation.go v1alpha1 "_ \"$mod/api/zookeeper/v1alpha1\""

# The framework imports no system and not the manager; its own packages,
# api/common and (its tests) internal/testenv it may.
put internal/framework/guard/guard_violation.go guard "_ \"$mod/api/zookeeper/v1alpha1\"" \
	"_ \"$mod/internal/zookeeper/zkclient\"" "_ \"$mod/internal/guardfive\"" "_ \"$mod/internal/manager\"" \
	"_ \"$mod/internal/framework/standard\"" "_ \"$mod/api/common/v1alpha1\""

# No system imports another: a ring over every system in api/ (the fifth
# one too), each importing the next one's internal/ and api/ packages and
# the manager; a system's own packages and the shared ones are fine.
for s in "${systems[@]}"; do put "internal/$s/guardleaf/guard_violation.go" guardleaf; done
for i in "${!systems[@]}"; do
	s="${systems[$i]}" next="${systems[$(((i + 1) % ${#systems[@]}))]}"
	put "internal/$s/guard/guard_violation.go" guard "_ \"$mod/internal/$next/guardleaf\"" \
		"_ \"$mod/api/$next/v1alpha1\"" "_ \"$mod/internal/manager\"" "_ \"$mod/internal/$s/guardleaf\"" \
		"_ \"$mod/api/$s/v1alpha1\"" "_ \"$mod/internal/framework/workload\"" "_ \"$mod/internal/systems\"" \
		"_ \"$mod/api/common/v1alpha1\""
done

# Wire clients import no framework and no controller-runtime; their tests
# may. Every client of the tree, the fifth system's too.
mapfile -t clients < <(withrole client)
((${#clients[@]} > 1)) || { echo "FAIL: no +steward:role=client package found" >&2; exit 1; }
for d in "${clients[@]}"; do
	put "$d/guard_violation.go" "$(pkgname "$d")" "_ \"$mod/internal/framework/probe\"" "$cr"
done
put "${clients[0]}/guard_violation_test.go" "$(pkgname "${clients[0]}")" "_ \"$mod/internal/framework/probe\""

# Pure builders and internal/framework/standard import no controller-runtime;
# the builders' tests may.
mapfile -t builders < <(withrole builder)
for d in "${builders[@]}" internal/framework/standard; do put "$d/guard_violation.go" "$(pkgname "$d")" "$cr"; done
put "${builders[0]}/guard_violation_test.go" "$(pkgname "${builders[0]}")" "$cr"

# Simulators and test harnesses: a package of non-test code imports each
# (and a client and a command the fifth system's); tests may. Each import
# is in a package of its own, not the one above the testing package: that
# one may be imported by it (internal/s3/s3test imports internal/s3), and
# the import back would be a cycle, not a violation.
mapfile -t testing < <(withrole testing)
((${#testing[@]} > 1)) || { echo "FAIL: no +steward:role=testing package found" >&2; exit 1; }
for d in "${testing[@]}"; do
	put "internal/guardtesting/${d//\//_}/guard_violation.go" guardtesting "_ \"$mod/$d\""
done
put internal/guardfive/guardfiveclient/guard_testing.go guardfiveclient "_ \"$mod/internal/guardfive/guardfivesim\""
put cmd/guardmain/main.go main "_ \"$mod/internal/guardfive/guardfivesim\""
put internal/guardfive/guard_testing_test.go guardfive "_ \"$mod/internal/guardfive/guardfivesim\""

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
	--max-issues-per-linter 0 --max-same-issues 0 --output.text.print-issued-lines=false "${pkgs[@]}") >"$out" 2>&1 || status=$?
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
for p in api/zookeeper/v1alpha1 internal/zookeeper/zkclient internal/guardfive internal/manager; do
	expect $f depguard "'$mod/$p' is not allowed from list 'framework-imports-no-system'"
done
refute $f "$mod/internal/framework/standard'"
refute $f "$mod/api/common/v1alpha1'"

for i in "${!systems[@]}"; do
	s="${systems[$i]}" next="${systems[$(((i + 1) % ${#systems[@]}))]}"
	f="internal/$s/guard/guard_violation.go"
	for p in "internal/$next/guardleaf" "api/$next/v1alpha1" internal/manager; do
		expect $f depguard "'$mod/$p' is not allowed from list '$s-imports-no-other-system'"
	done
	for p in "internal/$s/guardleaf" "api/$s/v1alpha1" internal/framework/workload internal/systems api/common/v1alpha1; do
		refute $f "$mod/$p'"
	done
done

for d in "${clients[@]}"; do
	expect "$d/guard_violation.go" depguard "'$mod/internal/framework/probe' is not allowed from list 'wire-client-imports-no-framework'"
	expect "$d/guard_violation.go" depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'wire-client-imports-no-framework'"
done
refute "${clients[0]}/guard_violation_test.go" depguard

for d in "${builders[@]}" internal/framework/standard; do
	expect "$d/guard_violation.go" depguard "'sigs.k8s.io/controller-runtime' is not allowed from list 'builders-import-no-controller-runtime'"
done
refute "${builders[0]}/guard_violation_test.go" depguard

for d in "${testing[@]}"; do
	expect "internal/guardtesting/${d//\//_}/guard_violation.go" depguard "'$mod/$d' is not allowed from list 'only-tests-import-testing-packages'"
done
expect internal/guardfive/guardfiveclient/guard_testing.go depguard "'$mod/internal/guardfive/guardfivesim' is not allowed from list 'only-tests-import-testing-packages'"
expect cmd/guardmain/main.go depguard "'$mod/internal/guardfive/guardfivesim' is not allowed from list 'only-tests-import-testing-packages'"
refute internal/guardfive/guard_testing_test.go depguard

# Every depguard rule of the (regenerated) configuration reported one of
# the violations above: a rule added without a fixture fails here.
while read -r rule; do
	grep -qF "from list '$rule'" "$out" || { echo "FAIL: depguard rule $rule reported nothing: add a violation of it here" >&2; failed=1; }
done < <(sed -n '/^    depguard:/,/^    [a-z]/s/^        \([a-z0-9-]*\):$/\1/p' "$tmp/.golangci.yml")

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
