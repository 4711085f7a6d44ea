// Package provisioner is localkube's dynamic volume provisioner: for each
// claim of the default StorageClass it makes a directory on the node and a
// hostPath PersistentVolume for it, and removes the directory when the
// volume is released with reclaim policy Delete; a claim that asks for
// more storage is expanded (Resize: its StorageClass allows volume
// expansion). A StorageClass whose "filesystem" parameter is ext4 gets
// volumes of their claims' size: each an ext4 filesystem in a file,
// loop-mounted on its directory, so that a full volume is full (such a
// volume does not grow). The
// controller loop is
// sig-storage-lib-external-provisioner's; this package only decides where
// the data lives.
package provisioner
