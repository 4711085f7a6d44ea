// Command mkimage assembles a container image as a docker-archive tarball
// (the format `ctr -n k8s.io images import`, `docker load` and
// `tarball.ImageFromPath` read) without a container engine or a registry.
//
// The image is built with go-containerregistry: an empty image, then one
// layer per --layer (in the order given), then at most one extra layer that
// holds every --file, then the configuration.
//
// Usage:
//
//	mkimage --tag REF [--tag REF...] --output PATH
//	        [--layer TAR...] [--file SRC:DST[:MODE]...]
//	        [--entrypoint ARG...] [--cmd ARG...] [--env K=V...]
//	        [--user USER] [--workdir DIR] [--expose PORT[/PROTO]...]
//	        [--label K=V...] [--platform OS/ARCH] [--created UNIX]
//
// Flags:
//
//	--tag REF          Image reference, e.g. localhost/zookeeper:3.8.0. Repeat
//	                   to give the same image several tags. A reference
//	                   without a tag gets "latest".
//	--layer PATH       An existing layer tarball (plain or gzip), e.g. a root
//	                   filesystem made by mmdebstrap. Repeatable; the first
//	                   one is the bottom layer.
//	--file SRC:DST[:MODE]
//	                   Put the local file SRC at the absolute path DST in one
//	                   extra layer built in memory. MODE is octal (0755); it
//	                   defaults to SRC's permission bits. Files and their
//	                   missing parent directories (0755) are owned by
//	                   root:root. Parents that an earlier --layer already has
//	                   as directories are left alone (so /tmp keeps 1777);
//	                   a parent that is a symlink there (Debian's /bin ->
//	                   usr/bin) is an error: give the resolved path instead.
//	--entrypoint ARG   One argv element of the entrypoint. Repeat the flag for
//	                   each element, in order:
//	                     --entrypoint /steward --entrypoint --leader-elect
//	                   (no JSON and no shell splitting, so nothing needs
//	                   quoting twice). A value may start with "-".
//	--cmd ARG          One argv element of the default arguments; repeat as
//	                   for --entrypoint.
//	--env K=V          An environment variable; repeatable, order kept. No
//	                   PATH is added implicitly.
//	--user USER        The user the process runs as. Prefer a numeric
//	                   UID[:GID]: the kubelet can only enforce runAsNonRoot
//	                   on a numeric user.
//	--workdir DIR      The working directory.
//	--expose PORT      An exposed port, "2181" (tcp) or "53/udp"; repeatable.
//	--label K=V        An image label; repeatable.
//	--platform OS/ARCH The platform written into the configuration; defaults
//	                   to linux/<GOARCH of mkimage>. containerd filters
//	                   imports by platform, so it has to match the node.
//	--created UNIX     The creation time (seconds since the epoch) written
//	                   into the configuration, the history and the --file
//	                   layer's entries. Defaults to $SOURCE_DATE_EPOCH, or 0.
//	--output PATH      Where to write the docker-archive. Parent directories
//	                   are created; the file is replaced atomically.
//
// Output is deterministic: timestamps are fixed, --file entries are sorted and
// carry no host ownership, and layers are gzipped with a fixed level, so the
// same inputs always give the same image ID and digest (and, with one --tag,
// a byte-identical archive; with several tags go-containerregistry may list
// them in either order in manifest.json). On success mkimage prints two lines
// to standard output:
//
//	id=sha256:...      the image ID (digest of the configuration), which is
//	                   what containerd and `crictl images` show
//	digest=sha256:...  the digest of the Docker schema 2 manifest
//
// Example, the operator image (a static, non-root binary; one small layer):
//
//	mkimage --tag localhost/steward:dev --file bin/steward:/steward:0755 \
//	    --entrypoint /steward --user 65532:65532 --output _output/steward.tar
package main
