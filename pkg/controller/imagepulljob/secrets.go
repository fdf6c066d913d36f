package imagepulljob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// maxCopyNameAttempts bounds the random names tried for one secret copy.
const maxCopyNameAttempts = 5

// syncSecrets makes sure every pull secret of the job that exists has a copy in the
// secrets namespace (node agents read secrets nowhere else) that names the job among its
// references and holds the source's data, and returns the references the job's NodeImage
// entries must carry. A job in the secrets namespace itself uses its secrets as they are.
func (c *Controller) syncSecrets(ctx context.Context, key string, job *appsv1beta1.ImagePullJob) ([]appsv1beta1.ReferenceObject, error) {
	if len(job.Spec.PullSecrets) == 0 {
		return nil, nil
	}
	var refs []appsv1beta1.ReferenceObject
	if job.Namespace == c.secretsNamespace {
		for _, name := range job.Spec.PullSecrets {
			if _, err := c.secrets.Secrets(job.Namespace).Get(name); err == nil {
				refs = append(refs, appsv1beta1.ReferenceObject{Namespace: job.Namespace, Name: name})
			}
		}
		return refs, nil
	}
	ns, err := c.namespaces.Get(c.secretsNamespace)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("copying the pull secrets of ImagePullJob %s: namespace %s does not exist", key, c.secretsNamespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s from the cache: %w", c.secretsNamespace, err)
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil, fmt.Errorf("copying the pull secrets of ImagePullJob %s: namespace %s is terminating", key, c.secretsNamespace)
	}
	copies, err := c.secrets.Secrets(c.secretsNamespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the secrets of namespace %s: %w", c.secretsNamespace, err)
	}
	for _, name := range job.Spec.PullSecrets {
		source, err := c.secrets.Secrets(job.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(4).Info("Pull secret does not exist; skipping it", "secret", klog.KRef(job.Namespace, name))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading secret %s/%s from the cache: %w", job.Namespace, name, err)
		}
		copyName, err := c.syncSecretCopy(ctx, key, source, copyOf(copies, source, key))
		if err != nil {
			return nil, err
		}
		refs = append(refs, appsv1beta1.ReferenceObject{Namespace: c.secretsNamespace, Name: copyName})
	}
	return refs, nil
}

// copyOf returns the copy of source to use: one the job already references, else any,
// the oldest by name; nil when there is none.
func copyOf(copies []*corev1.Secret, source *corev1.Secret, jobKey string) *corev1.Secret {
	sourceKey := source.Namespace + "/" + source.Name
	var found *corev1.Secret
	for _, s := range copies {
		if s.Annotations[appsv1beta1.ImagePullSecretSourceKeyAnnotation] != sourceKey || s.DeletionTimestamp != nil {
			continue
		}
		if slices.Contains(secretReferences(s), jobKey) {
			return s
		}
		if found == nil || s.Name < found.Name {
			found = s
		}
	}
	return found
}

// syncSecretCopy creates the copy of source or brings the existing one up to date, and
// returns its name.
func (c *Controller) syncSecretCopy(ctx context.Context, key string, source, existing *corev1.Secret) (string, error) {
	secrets := c.client.CoreV1().Secrets(c.secretsNamespace)
	if existing == nil {
		for range maxCopyNameAttempts {
			copied := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: c.secretsNamespace,
					Name:      copyName(source.Name),
					Annotations: map[string]string{
						appsv1beta1.ImagePullSecretSourceKeyAnnotation:  source.Namespace + "/" + source.Name,
						appsv1beta1.ImagePullSecretReferencesAnnotation: key,
						appsv1beta1.ImagePullSecretModeAnnotation:       appsv1beta1.ImagePullSecretModeBatch,
					},
				},
				Type: source.Type,
				Data: maps.Clone(source.Data),
			}
			result, err := secrets.Create(ctx, copied, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("copying secret %s/%s into namespace %s: %w", source.Namespace, source.Name, c.secretsNamespace, err)
			}
			klog.FromContext(ctx).V(2).Info("Copied a pull secret", "source", klog.KObj(source), "copy", klog.KObj(result))
			c.secretVersions.Expect(key, result)
			return result.Name, nil
		}
		return "", fmt.Errorf("copying secret %s/%s into namespace %s: %d random names were taken", source.Namespace, source.Name, c.secretsNamespace, maxCopyNameAttempts)
	}

	refs := secretReferences(existing)
	if !slices.Contains(refs, key) {
		refs = append(refs, key)
	}
	slices.Sort(refs)
	joined := strings.Join(refs, ",")
	if existing.Annotations[appsv1beta1.ImagePullSecretReferencesAnnotation] == joined &&
		existing.Annotations[appsv1beta1.ImagePullSecretModeAnnotation] == appsv1beta1.ImagePullSecretModeBatch &&
		existing.Type == source.Type && semanticEqual(existing.Data, source.Data) {
		return existing.Name, nil
	}
	updated := existing.DeepCopy()
	updated.Annotations[appsv1beta1.ImagePullSecretReferencesAnnotation] = joined
	updated.Annotations[appsv1beta1.ImagePullSecretModeAnnotation] = appsv1beta1.ImagePullSecretModeBatch
	updated.Data = maps.Clone(source.Data)
	if updated.Type != source.Type {
		// The type of a secret cannot change; a copy of another type must be replaced.
		if err := secrets.Delete(ctx, existing.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &existing.ResourceVersion}}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("deleting secret %s/%s, a copy of another type than its source: %w", c.secretsNamespace, existing.Name, err)
		}
		return c.syncSecretCopy(ctx, key, source, nil)
	}
	result, err := secrets.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return "", fmt.Errorf("updating secret %s/%s, the copy of %s/%s: %w", c.secretsNamespace, existing.Name, source.Namespace, source.Name, err)
	}
	c.secretVersions.Expect(key, result)
	return result.Name, nil
}

// copyName is the name of a new copy of the secret named source: the source's name and six
// random hexadecimal digits.
func copyName(source string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	// Leave room for the suffix within the 253 characters of a secret name.
	if len(source) > 246 {
		source = source[:246]
	}
	return source + "-" + hex.EncodeToString(b[:])
}

// releaseSecrets removes the job from the references of every copy naming it, deleting
// the copies no job references any more.
func (c *Controller) releaseSecrets(ctx context.Context, key string, job *appsv1beta1.ImagePullJob) error {
	if job.Namespace == c.secretsNamespace {
		return nil
	}
	copies, err := c.secrets.Secrets(c.secretsNamespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing the secrets of namespace %s: %w", c.secretsNamespace, err)
	}
	secrets := c.client.CoreV1().Secrets(c.secretsNamespace)
	for _, s := range copies {
		if _, isCopy := s.Annotations[appsv1beta1.ImagePullSecretSourceKeyAnnotation]; !isCopy {
			continue
		}
		refs := secretReferences(s)
		i := slices.Index(refs, key)
		if i < 0 {
			continue
		}
		refs = slices.Delete(refs, i, i+1)
		if len(refs) == 0 {
			err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &s.ResourceVersion}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting secret %s/%s, a copy no job references any more: %w", s.Namespace, s.Name, err)
			}
			klog.FromContext(ctx).V(2).Info("Deleted a pull secret copy", "secret", klog.KObj(s))
			c.secretVersions.Gone(key, s)
			continue
		}
		updated := s.DeepCopy()
		updated.Annotations[appsv1beta1.ImagePullSecretReferencesAnnotation] = strings.Join(refs, ",")
		result, err := secrets.Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("removing ImagePullJob %s from the references of secret %s/%s: %w", key, s.Namespace, s.Name, err)
		}
		c.secretVersions.Expect(key, result)
	}
	return nil
}
