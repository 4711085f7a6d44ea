// Package identity decides which store a log pod runs as, and keeps that
// decision on the store's volume.
//
// A log store's UUID names its raft replicas: a store that comes back under
// its UUID with an empty volume would rejoin its shards as members that
// forgot what they acknowledged (matrixone-operator #590 lost the WAL
// that way). So the UUID lives with the data: the first start on a volume
// writes it there, and every later start reads it back. On a new volume the
// store takes the UUID the operator chose for it: the one of
// "<namespace>/<pod>" when the set is created, a new one when the operator
// replaced a failed store (its replacement file; never in the failed pod
// itself, whose UID the operator records beside it: wire.FailedPodKey).
// Once the log service has been bootstrapped, a new volume starts only
// after HAKeeper confirms that it does not know the UUID: a volume lost
// outside the operator (deleted by hand, or its node gone) then keeps the
// pod from starting, and the operator replaces the store.
package identity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// File is the name of the file, at the root of a store's volume, that holds
// the store's UUID.
const File = "store-uuid"

// BootstrappedFile is the key of the stores' ConfigMap (and so the file in
// its directory) the operator writes once HAKeeper has bootstrapped the log
// service; every other key is a pod's name, and its value the UUID the pod
// takes on a new volume.
const BootstrappedFile = "bootstrapped"

// lostFound is what mkfs leaves on a new ext4 volume.
const lostFound = "lost+found"

// Resolver decides a store's UUID.
type Resolver struct {
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Volume is where the store's volume is mounted.
	Volume string
	// Stores is where the operator's stores ConfigMap is mounted ("" or
	// absent: nothing replaced, not bootstrapped yet).
	Stores string
	// Known asks HAKeeper whether it knows a log store by UUID.
	Known func(ctx context.Context, uuid string) (bool, error)
	// PodUID is the pod's UID ("": unknown, and never the failed pod's;
	// see wire.FailedPodKey).
	PodUID string
}

// Resolve returns the store's UUID, recording it on the volume when the
// volume has none yet.
func (r Resolver) Resolve(ctx context.Context) (string, error) {
	path := filepath.Join(r.Volume, File)
	switch data, err := os.ReadFile(path); {
	case err == nil:
		uuid := strings.TrimSpace(string(data))
		if uuid == "" {
			return "", fmt.Errorf("%s is empty: the store's identity is lost, and guessing it could rejoin its shards with the wrong data", path)
		}
		return uuid, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	empty, err := isEmpty(r.Volume)
	if err != nil {
		return "", err
	}
	uuid := wire.StoreID(r.Namespace, r.Pod)
	if empty {
		if uuid, err = r.newStore(ctx, uuid); err != nil {
			return "", err
		}
	}
	// A volume with data and no file is a store from before identity files:
	// it has always run as the UUID of its pod's name.
	if err := writeFile(path, uuid); err != nil {
		return "", fmt.Errorf("record the store's identity: %w", err)
	}
	return uuid, nil
}

// newStore returns the UUID a store on a new volume takes: the operator's
// replacement when there is one, uuid otherwise; after the bootstrap only
// when HAKeeper confirms it is new.
func (r Resolver) newStore(ctx context.Context, uuid string) (string, error) {
	if r.Stores == "" {
		return uuid, nil
	}
	replacement, err := readOptional(filepath.Join(r.Stores, r.Pod))
	if err != nil {
		return "", err
	}
	if replacement != "" {
		failed, err := readOptional(filepath.Join(r.Stores, wire.FailedPodKey(r.Pod)))
		if err != nil {
			return "", err
		}
		if r.PodUID != "" && failed == r.PodUID {
			return "", fmt.Errorf("the operator replaces the failed store of this pod (UID %s) by store %s: it deletes this pod and its volume next, and the pod it re-creates on a new volume starts as the new store", r.PodUID, replacement)
		}
		uuid = replacement
	}
	bootstrapped, err := readOptional(filepath.Join(r.Stores, BootstrappedFile))
	if err != nil || bootstrapped == "" {
		return uuid, err
	}
	known, err := r.Known(ctx, uuid)
	switch {
	case err != nil:
		return "", fmt.Errorf("the volume is empty and the log service was bootstrapped: HAKeeper must confirm that store %s is new before it starts, and could not be asked: %w", uuid, err)
	case known:
		return "", fmt.Errorf("the volume is empty but HAKeeper knows store %s: starting it without its data could lose acknowledged writes; the operator replaces a failed store with a new identity once its shards keep their majority (docs/matrixone.md)", uuid)
	}
	return uuid, nil
}

// isEmpty reports whether dir holds nothing but what mkfs leaves.
func isEmpty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.Name() != lostFound {
			return false, nil
		}
	}
	return true, nil
}

// readOptional returns the trimmed content of path, "" when it does not
// exist.
func readOptional(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(data)), err
}

// writeFile writes content to path durably: a temporary file, synced, then
// renamed over path, and the directory synced.
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(content + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	return errors.Join(dir.Sync(), dir.Close())
}
