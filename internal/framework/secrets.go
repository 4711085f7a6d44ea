package framework

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PasswordKey is the key of a generated password Secret's password.
const PasswordKey = "password"

// EnsurePasswordSecret creates the Secret that newSecret returns, with a
// random password under PasswordKey, when no Secret has its name. It never
// changes an existing Secret: the system holds the password (or its
// digest) from its first start. newSecret should give the Secret no owner,
// so that under a Retain policy it outlives its object like the data it
// opens, and label it with a component DeleteGeneratedSecret recognizes.
//
// The existence check reads c (the manager's cache, which holds only
// Steward's Secrets), then live (the API server) for a user's Secret of
// that name: a pass reads, and never writes, once the Secret exists.
func EnsurePasswordSecret(ctx context.Context, c client.Client, live client.Reader, log logr.Logger,
	newSecret func(password string) *corev1.Secret) error {
	key := client.ObjectKeyFromObject(newSecret(""))
	err := c.Get(ctx, key, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		err = live.Get(ctx, key, &corev1.Secret{})
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	secret := newSecret(rand.Text()) // a password only for a Secret to create
	switch err := c.Create(ctx, secret); {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	log.Info("Generated a password Secret", "secret", secret.Name)
	return nil
}

// DeleteGeneratedSecret deletes Secret namespace/name if its component
// label says the controller generated it; a user's Secret of that name
// stays.
func DeleteGeneratedSecret(ctx context.Context, c client.Client, namespace, name, component string) error {
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)
	if apierrors.IsNotFound(err) || err == nil && s.Labels["app.kubernetes.io/component"] != component {
		return nil
	}
	if err != nil {
		return err
	}
	if err := client.IgnoreNotFound(c.Delete(ctx, s)); err != nil {
		return fmt.Errorf("delete Secret %s: %w", name, err)
	}
	return nil
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
