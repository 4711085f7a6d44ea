// Package provisioner is localkube's dynamic volume provisioner: for each
// claim of the default StorageClass it makes a directory on the node and a
// hostPath PersistentVolume for it, and removes the directory when the
// volume is released with reclaim policy Delete; a claim that asks for
// more storage is expanded (Resize: its StorageClass allows volume
// expansion). The controller loop is
// sig-storage-lib-external-provisioner's; this package only decides where
// the data lives.
package provisioner
