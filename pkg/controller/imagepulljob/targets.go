package imagepulljob

import (
	"fmt"
	"slices"
	"strings"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// targets returns the NodeImages the job pulls its image on, in the order it hands them
// its tag: by name, except for a pod-selecting job that a workload controls, whose nodes
// follow the workload's pods from the oldest, so that the nodes of the pods it made first
// get the image first.
func (c *Controller) targets(job *appsv1beta1.ImagePullJob) ([]*appsv1beta1.NodeImage, error) {
	spec := &job.Spec
	switch {
	case spec.PodSelector != nil:
		return c.podSelectorTargets(job)
	case spec.Selector != nil && len(spec.Selector.Names) > 0:
		var out []*appsv1beta1.NodeImage
		for _, name := range sets.List(sets.New(spec.Selector.Names...)) {
			ni, err := c.nodeImages.Get(name)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading NodeImage %s from the cache: %w", name, err)
			}
			out = append(out, ni)
		}
		return out, nil
	}
	selector := labels.Everything()
	if spec.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(&spec.Selector.LabelSelector); err != nil {
			return nil, fmt.Errorf("parsing the selector of ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	out, err := c.nodeImages.List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing NodeImages: %w", err)
	}
	slices.SortFunc(out, func(a, b *appsv1beta1.NodeImage) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// podSelectorTargets returns the NodeImages of the nodes running active pods the job
// selects, each once.
func (c *Controller) podSelectorTargets(job *appsv1beta1.ImagePullJob) ([]*appsv1beta1.NodeImage, error) {
	selector, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing the podSelector of ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	pods, err := c.pods.Pods(job.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", job.Namespace, err)
	}
	pods = slices.DeleteFunc(slices.Clone(pods), func(pod *corev1.Pod) bool {
		return !podutil.IsPodActive(pod) || pod.Spec.NodeName == ""
	})
	if metav1.GetControllerOf(job) != nil {
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	} else {
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Spec.NodeName, b.Spec.NodeName) })
	}
	seen := sets.New[string]()
	var out []*appsv1beta1.NodeImage
	for _, pod := range pods {
		if seen.Has(pod.Spec.NodeName) {
			continue
		}
		seen.Insert(pod.Spec.NodeName)
		ni, err := c.nodeImages.Get(pod.Spec.NodeName)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading NodeImage %s from the cache: %w", pod.Spec.NodeName, err)
		}
		out = append(out, ni)
	}
	return out, nil
}
