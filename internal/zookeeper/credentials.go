package zookeeper

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/zookeeper/build"
)

// credentials returns the super user's password from the cluster's
// credentials Secret, creating the Secret with a random password the first
// time. The Secret is never updated: the running servers hold its digest.
// A Secret the cache does not show is created without reading it first (a
// new cluster's read would only be answered 404); a create answered
// AlreadyExists, or a cache behind this process's own create, reads it
// live.
func (c *Controller) credentials(ctx *Context) (string, error) {
	zk := ctx.Obj
	key := client.ObjectKey{Namespace: zk.Namespace, Name: build.CredentialsSecretName(zk)}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	err := ctx.Client.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) && !ctx.CreatedRecently(secret) {
		password, created, cerr := c.createCredentials(ctx)
		if cerr != nil || created {
			return password, cerr
		}
	}
	if apierrors.IsNotFound(err) {
		// Not in the cache, and there: created a moment ago, or not
		// labeled as Steward's (the cache holds only those).
		err = ctx.Reader.Get(ctx, key, secret)
	}
	if err != nil {
		return "", fmt.Errorf("get Secret %s: %w", key.Name, err)
	}
	if !metav1.IsControlledBy(secret, zk) {
		return "", framework.Terminal(fmt.Errorf("secret %s exists and does not belong to this cluster; delete or rename it", key.Name))
	}
	password := string(secret.Data[build.SuperPasswordKey])
	if password == "" {
		return "", framework.Terminal(fmt.Errorf("secret %s has no %s", key.Name, build.SuperPasswordKey))
	}
	return password, nil
}

// createCredentials creates the Secret with a new password; created is
// false, with no error, when a Secret of that name exists already.
func (c *Controller) createCredentials(ctx *Context) (password string, created bool, err error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", false, fmt.Errorf("generate a password: %w", err)
	}
	password = base64.RawURLEncoding.EncodeToString(raw)
	secret := build.CredentialsSecret(ctx.Obj, password)
	secret.OwnerReferences = []metav1.OwnerReference{ctx.Owner()}
	switch err := ctx.Client.Create(ctx, secret); {
	case apierrors.IsAlreadyExists(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	ctx.Created(secret)
	ctx.Log.Info("Created the super user's credentials", "secret", secret.Name)
	return password, true, nil
}
