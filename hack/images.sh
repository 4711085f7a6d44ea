#!/usr/bin/env bash
# Builds the images named on the command line (every images/*/build.sh when
# none is) into docker-archives, skipping an image whose inputs did not
# change since its archive was built:
#
#   hack/images.sh [NAME...]      # images/NAME/build.sh -> $IMAGES_DIR/NAME.tar
#
# NAME-X.Y.Z, where images/NAME-X.Y.Z does not exist, is images/NAME built
# at another version than its VERSION file's (VERSION=X.Y.Z build.sh), into
# NAME-X.Y.Z.tar: the version an upgrade test starts from.
#
# An image's inputs are the files of images/NAME/ (but its *.md
# documentation), the mkimage binary, and what `images/NAME/build.sh inputs`
# prints, one per line: a path (a file or a directory, relative to the
# repository or absolute), whose content counts, or a NAME=value setting.
# Their hash is kept beside the archive in NAME.stamp; the build runs when
# the stamp differs or the archive is missing, and the stamp is written
# only after the build succeeded.
#
# Environment:
#   IMAGES_DIR  where archives and stamps go (default: _output/images)
#   MKIMAGE     the mkimage binary, passed on to every build.sh (required)
#   FORCE       1 rebuilds even when the stamp matches
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
IMAGES_DIR=${IMAGES_DIR:-$repo/_output/images}
: "${MKIMAGE:?set MKIMAGE to the mkimage binary (make images does)}"
export LC_ALL=C MKIMAGE

log() { printf '[images] %s\n' "$*" >&2; }

# hash_path prints a line per file under $1 (or for $1 itself): its
# checksum and name; "missing" when there is nothing there.
hash_path() {
	if [[ -d $1 ]]; then
		find -L "$1" -type f ! -name '*.md' -print0 | sort -z | xargs -0 -r sha256sum
	elif [[ -e $1 ]]; then
		sha256sum "$1"
	else
		echo "missing $1"
	fi
}

# stamp prints the hash of everything image $1 is built from.
stamp() {
	local name=$1 input inputs
	inputs=$("images/$name/build.sh" inputs) || {
		log "error: images/$name/build.sh inputs failed"
		return 1
	}
	{
		echo "image $name, stamp format 1"
		hash_path "images/$name"
		hash_path "$MKIMAGE"
		while IFS= read -r input; do
			case $input in
			'') ;;
			*=*) echo "setting $input" ;;
			*) hash_path "$input" ;;
			esac
		done <<<"$inputs"
	} | sha256sum | cut -d' ' -f1
}

names=("$@")
if ((${#names[@]} == 0)); then
	for script in images/*/build.sh; do
		names+=("$(basename "$(dirname "$script")")")
	done
fi

mkdir -p "$IMAGES_DIR"
for name in "${names[@]}"; do
	dir=$name
	unset VERSION
	if [[ ! -d images/$name && $name =~ ^(.+)-([0-9]+\.[0-9]+\.[0-9]+)$ ]]; then
		dir=${BASH_REMATCH[1]}
		export VERSION=${BASH_REMATCH[2]}
	fi
	[[ -x images/$dir/build.sh ]] || { log "error: no executable images/$dir/build.sh"; exit 1; }
	out=$IMAGES_DIR/$name.tar
	want=$(stamp "$dir")
	if [[ ${FORCE:-} != 1 && -f $out && -f $IMAGES_DIR/$name.stamp && $(<"$IMAGES_DIR/$name.stamp") == "$want" ]]; then
		log "$name: up to date ($out)"
		continue
	fi
	log "$name: building images/$dir/build.sh${VERSION:+ at $VERSION} -> $out"
	rm -f "$IMAGES_DIR/$name.stamp"
	start=$SECONDS
	OUT=$out "images/$dir/build.sh"
	echo "$want" >"$IMAGES_DIR/$name.stamp"
	log "$name: built in $((SECONDS - start))s"
done
