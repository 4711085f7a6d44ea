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
func (c *Controller) credentials(ctx *Context) (string, error) {
	zk := ctx.Obj
	key := client.ObjectKey{Namespace: zk.Namespace, Name: build.CredentialsSecretName(zk)}
	secret := &corev1.Secret{}
	err := ctx.Client.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		// The cache may not have the Secret this controller just created.
		err = ctx.Reader.Get(ctx, key, secret)
	}
	if apierrors.IsNotFound(err) {
		return c.createCredentials(ctx)
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

func (c *Controller) createCredentials(ctx *Context) (string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate a password: %w", err)
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	secret := build.CredentialsSecret(ctx.Obj, password)
	secret.OwnerReferences = []metav1.OwnerReference{ctx.Owner()}
	if err := ctx.Client.Create(ctx, secret); err != nil {
		// AlreadyExists: another pass won; the next pass reads it.
		return "", fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	ctx.Log.Info("Created the super user's credentials", "secret", secret.Name)
	return password, nil
}
