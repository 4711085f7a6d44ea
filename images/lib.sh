# Shared by the images' build.sh scripts that build one archive of several
# tags of one binary (the simulators: one tag to run, one to upgrade to).
# Source it; it defines functions only.

# tag_version prints the version an image reference's tag names: 1.1 for
# localhost/obsim:1.1, latest without a tag.
tag_version() {
	local last=${1##*/}
	if [[ $last == *:* ]]; then echo "${last##*:}"; else echo latest; fi
}

# merge_archives OUT ARCHIVE... writes to OUT one docker-archive of every
# image in the ARCHIVEs (each written by mkimage: one image, its
# manifest.json one JSON array on one line): their blobs (a layer they
# share once, each image's config) and one manifest.json listing them all,
# which `ctr images import` and `docker load` read image by image.
merge_archives() {
	local out=$1 dir entries=() manifest archive
	shift
	(($# > 0)) || { echo "merge_archives: no archive to merge" >&2; return 2; }
	dir=$(mktemp -d)
	for archive in "$@"; do
		tar -xf "$archive" -C "$dir" --exclude=manifest.json
		manifest=$(tar -xOf "$archive" manifest.json)
		if [[ $manifest != \[*\] ]]; then
			echo "merge_archives: the manifest.json of $archive is not a JSON array: $manifest" >&2
			rm -rf "$dir"
			return 1
		fi
		manifest=${manifest#[}
		entries+=("${manifest%]}")
	done
	(IFS=,; printf '[%s]' "${entries[*]}") >"$dir/manifest.json"
	(cd "$dir" && find . -type f -printf '%P\n' | LC_ALL=C sort) >"$dir.files"
	tar -cf "$out.tmp" -C "$dir" --owner=0 --group=0 --numeric-owner --mtime=@0 -T "$dir.files"
	mv "$out.tmp" "$out"
	rm -rf "$dir" "$dir.files"
}

# build_tagged_images OUT VAR VERSION_FN MKIMAGE_ARG... builds one image per
# reference in $TAG with the mkimage command in the array "mkimage" and the
# MKIMAGE_ARGs (the binary, entrypoint, user, ports), each with every K=V
# of $ENV and VAR set to what VERSION_FN prints for its reference (unless
# $ENV sets VAR), and merges them into the archive OUT.
build_tagged_images() {
	local out=$1 var=$2 version_fn=$3 dir n=0 t e args
	shift 3
	dir=$(mktemp -d)
	for t in $TAG; do
		n=$((n + 1))
		args=(--tag "$t")
		for e in $ENV; do args+=(--env "$e"); done
		if [[ " $ENV" != *" $var="* ]]; then
			args+=(--env "$var=$("$version_fn" "$t")")
		fi
		"${mkimage[@]}" "${args[@]}" "$@" --output "$dir/image-$n.tar" >/dev/null
	done
	if ((n == 0)); then
		echo "build_tagged_images: TAG names no image" >&2
		rm -rf "$dir"
		return 2
	fi
	merge_archives "$out" "$dir"/image-*.tar
	rm -rf "$dir"
}
