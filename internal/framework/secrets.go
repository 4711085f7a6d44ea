package framework

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PasswordKey is the key of a generated password Secret's password.
const PasswordKey = "password"

// EnsurePasswordSecret creates the Secret that newSecret returns, with a
// random password under PasswordKey, when no Secret has its name. It never
// changes an existing Secret: the system holds the password (or its
// digest) from its first start. newSecret should give the Secret no owner,
// so that under a Retain policy it outlives its object like the data it
// opens, and label it with the owner's standard labels, which
// DeleteGeneratedSecret matches.
// A password is drawn only for a Secret to create; a pass reads, and never
// writes, once the Secret exists (CreateIfAbsent).
func EnsurePasswordSecret(ctx context.Context, c client.Client, live client.Reader, log logr.Logger,
	newSecret func(password string) *corev1.Secret) error {
	key := client.ObjectKeyFromObject(newSecret(""))
	created, err := CreateIfAbsent(ctx, c, live, key, &corev1.Secret{},
		func() client.Object { return newSecret(rand.Text()) })
	if err != nil {
		return fmt.Errorf("ensure Secret %s: %w", key.Name, err)
	}
	if created {
		log.Info("Generated a password Secret", "secret", key.Name)
	}
	return nil
}

// CreateIfAbsent creates the object create returns unless one of obj's kind
// exists under key: it reads c (the manager's cache) into obj, then live
// (the API server, for an object the cache does not hold, such as a
// user's), and creates only when neither has it; another writer's
// concurrent create counts as found. create is called only for an object
// to create. It reports whether it created one; otherwise obj holds the
// object found.
func CreateIfAbsent(ctx context.Context, c client.Client, live client.Reader, key client.ObjectKey, obj client.Object,
	create func() client.Object) (bool, error) {
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = live.Get(ctx, key, obj)
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	switch err := c.Create(ctx, create()); {
	case apierrors.IsAlreadyExists(err):
		return false, live.Get(ctx, key, obj)
	case err != nil:
		return false, err
	}
	return true, nil
}

// DeleteGeneratedSecret deletes the Secret generated, if the Secret of its
// namespace and name carries every label generated does: the object
// deleting it generated it. A user's Secret of that name stays, and so
// does one another object generated (its instance label differs), such as
// the source cluster's root password a restored cluster names.
func DeleteGeneratedSecret(ctx context.Context, c client.Client, generated *corev1.Secret) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: generated.Namespace, Name: generated.Name}}
	_, err := DeleteGenerated(ctx, c, s, generated.Labels)
	return err
}

// DeleteGenerated deletes the object of obj's kind and key (its namespace
// and name) if its labels include labels: the controller made it. Another
// object of that name (a user's) stays. It reports whether it deleted one.
func DeleteGenerated(ctx context.Context, c client.Client, obj client.Object, labels map[string]string) (bool, error) {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for k, v := range labels {
		if obj.GetLabels()[k] != v {
			return false, nil
		}
	}
	uid := obj.GetUID()
	if err := client.IgnoreNotFound(c.Delete(ctx, obj, client.Preconditions{UID: &uid})); err != nil {
		return false, fmt.Errorf("delete %s: %w", obj.GetName(), err)
	}
	return true, nil
}

// ReadPassword reads the password (PasswordKey) in Secret namespace/name;
// a Secret without one is an invalid spec.
func ReadPassword(ctx context.Context, r client.Reader, namespace, name string) (string, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	p, ok := s.Data[PasswordKey]
	if !ok {
		return "", InvalidSpec(fmt.Errorf("secret %s has no key %q", name, PasswordKey))
	}
	return string(p), nil
}

// SecretReader returns a reader of cache that reads a Secret the cache
// does not hold from live (the API server): the manager's cache holds only
// Steward's own Secrets, and a user's, such as the root password Secret a
// spec names, is read live. Other kinds are read from the cache only.
func SecretReader(cache, live client.Reader) client.Reader {
	return cachedThenLive{cache: cache, live: live}
}

type cachedThenLive struct{ cache, live client.Reader }

func (r cachedThenLive) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.cache.Get(ctx, key, obj, opts...)
	if _, secret := obj.(*corev1.Secret); secret && apierrors.IsNotFound(err) {
		return r.live.Get(ctx, key, obj, opts...)
	}
	return err
}

func (r cachedThenLive) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, secrets := list.(*corev1.SecretList); secrets {
		return r.live.List(ctx, list, opts...)
	}
	return r.cache.List(ctx, list, opts...)
}
