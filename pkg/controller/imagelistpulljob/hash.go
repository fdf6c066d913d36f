package imagelistpulljob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"
	"k8s.io/utils/dump"
)

// hashLabel carries the template hash on a list job and on its children.
const hashLabel = appsv1beta1.ControllerRevisionHashLabelKey

// maxNamePrefix is how much of a list job's name starts its children's names: with the
// image's 8 hex digits, the hash (at most 10 characters) and two dashes, a child's name
// stays within the 253 characters of an object name.
const maxNamePrefix = 230

// templateHash returns the hash of a list job's template as OpenKruise computes it: FNV-32a
// over the deep print of the template value (k8s.io/utils/dump.ForHash, which prints Go
// type and field names), in decimal, mapped onto rand.SafeEncodeString's alphabet. The API
// types keep OpenKruise's type and field names for this.
func templateHash(template *appsv1beta1.ImagePullJobTemplate) string {
	hasher := fnv.New32a()
	_, _ = fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	return rand.SafeEncodeString(strconv.FormatUint(uint64(hasher.Sum32()), 10))
}

// childName is the name of the child pulling image for the list job named listJobName whose
// template hashes to hash. The same list job, image and template always give the same
// name, so that a create repeated after a restart, from a cache that did not show the
// child yet, is refused instead of making a second child.
func childName(listJobName, image, hash string) string {
	prefix := listJobName
	if len(prefix) > maxNamePrefix {
		// A cut may end in a dot, which may not precede a dash.
		prefix = strings.TrimRight(prefix[:maxNamePrefix], ".-")
	}
	imageHash := fnv.New32a()
	_, _ = imageHash.Write([]byte(image))
	return fmt.Sprintf("%s-%08x-%s", prefix, imageHash.Sum32(), hash)
}

// hashLabelPatch is the JSON merge patch that sets the hash label to hash.
func hashLabelPatch(hash string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{hashLabel: hash}}})
}

// labelListJob sets the hash label on the list job, when it differs, and returns the list
// job as written.
func (c *Controller) labelListJob(ctx context.Context, listJob *appsv1beta1.ImageListPullJob, hash string) (*appsv1beta1.ImageListPullJob, error) {
	if listJob.Labels[hashLabel] == hash {
		return listJob, nil
	}
	patch, err := hashLabelPatch(hash)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s label patch: %w", hashLabel, err)
	}
	updated, err := c.bosunClient.AppsV1beta1().ImageListPullJobs(listJob.Namespace).Patch(ctx, listJob.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("labelling ImageListPullJob %s/%s with %s=%s: %w", listJob.Namespace, listJob.Name, hashLabel, hash, err)
	}
	klog.FromContext(ctx).V(2).Info("Labelled the ImageListPullJob with its template hash", "hash", hash, "previous", listJob.Labels[hashLabel])
	return updated, nil
}

// relabelChildren sets the hash label on current children labelled with another hash (or
// none): children another implementation or version created from the same template, which
// are kept rather than created again.
func (c *Controller) relabelChildren(ctx context.Context, children []*appsv1beta1.ImagePullJob, hash string) error {
	if len(children) == 0 {
		return nil
	}
	patch, err := hashLabelPatch(hash)
	if err != nil {
		return fmt.Errorf("encoding the %s label patch: %w", hashLabel, err)
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, child := range children {
		_, err := c.bosunClient.AppsV1beta1().ImagePullJobs(child.Namespace).Patch(ctx, child.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			// Gone since the cache showed it; the next sync works without it.
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("labelling ImagePullJob %s/%s with %s=%s: %w", child.Namespace, child.Name, hashLabel, hash, err))
			continue
		}
		logger.V(2).Info("Relabelled a current child with the template hash", "imagePullJob", klog.KObj(child), "previous", child.Labels[hashLabel])
	}
	return errors.Join(errs...)
}
