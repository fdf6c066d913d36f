package imagelistpulljob

import (
	"cmp"
	"fmt"
	"slices"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
)

// childPlan is what one sync does with a list job's children.
type childPlan struct {
	// current is, by image, the child of each listed image whose child is current.
	current map[string]*appsv1beta1.ImagePullJob
	// relabel are the current children not labelled with the template hash.
	relabel []*appsv1beta1.ImagePullJob
	// create are the listed images without a current child, in spec.images order.
	create []string
	// remove are the children to delete: those of images no longer listed, those that are
	// not current, and the younger ones of several with the same image.
	remove []*appsv1beta1.ImagePullJob
}

// children returns the ImagePullJobs the list job controls (by UID) that are not being
// deleted.
func (c *Controller) children(listJob *appsv1beta1.ImageListPullJob) ([]*appsv1beta1.ImagePullJob, error) {
	objs, err := c.jobs.ByIndex(controllerUIDIndex, string(listJob.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the ImagePullJobs of ImageListPullJob %s/%s from the cache: %w", listJob.Namespace, listJob.Name, err)
	}
	var out []*appsv1beta1.ImagePullJob
	for _, obj := range objs {
		job, ok := obj.(*appsv1beta1.ImagePullJob)
		if ok && job.Namespace == listJob.Namespace && job.DeletionTimestamp == nil {
			out = append(out, job)
		}
	}
	return out, nil
}

// planChildren decides, from the list job's children and its template hash, which
// children are current, which to relabel, which images need a child and which children go.
func planChildren(listJob *appsv1beta1.ImageListPullJob, children []*appsv1beta1.ImagePullJob, hash string) childPlan {
	plan := childPlan{current: map[string]*appsv1beta1.ImagePullJob{}}

	// The oldest child of an image is its child; a younger one is a leftover of a lost
	// race (OpenKruise names children at random) and would only pull the image again.
	sorted := slices.Clone(children)
	slices.SortStableFunc(sorted, func(a, b *appsv1beta1.ImagePullJob) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	byImage := map[string]*appsv1beta1.ImagePullJob{}
	for _, child := range sorted {
		if _, taken := byImage[child.Spec.Image]; taken {
			plan.remove = append(plan.remove, child)
			continue
		}
		byImage[child.Spec.Image] = child
	}

	template := defaultedTemplate(&listJob.Spec.ImagePullJobTemplate)
	listed := sets.New[string]()
	for _, image := range listJob.Spec.Images {
		if listed.Has(image) {
			continue
		}
		listed.Insert(image)
		child, ok := byImage[image]
		switch {
		case !ok:
			plan.create = append(plan.create, image)
		case isCurrent(child, template, hash):
			plan.current[image] = child
			if child.Labels[hashLabel] != hash {
				plan.relabel = append(plan.relabel, child)
			}
		default:
			plan.remove = append(plan.remove, child)
			plan.create = append(plan.create, image)
		}
	}
	for _, child := range sorted {
		if byImage[child.Spec.Image] == child && !listed.Has(child.Spec.Image) {
			plan.remove = append(plan.remove, child)
		}
	}
	return plan
}

// isCurrent reports whether child was made from the list job's template: it carries the
// template's hash, or its spec without the image equals the template (already defaulted)
// once defaulted as ImagePullJobs are. The second rule keeps children whose label another
// hash function wrote: OpenKruise's hash prints Go type names, and changed with them.
func isCurrent(child *appsv1beta1.ImagePullJob, defaultedListTemplate *appsv1beta1.ImagePullJobTemplate, hash string) bool {
	if child.Labels[hashLabel] == hash {
		return true
	}
	return apiequality.Semantic.DeepEqual(defaultedTemplate(&child.Spec.ImagePullJobTemplate), defaultedListTemplate)
}

// defaultedTemplate returns a copy of template with the defaults an ImagePullJob gets at
// admission: a list job's template is stored with fewer defaults than its children's.
func defaultedTemplate(template *appsv1beta1.ImagePullJobTemplate) *appsv1beta1.ImagePullJobTemplate {
	job := &appsv1beta1.ImagePullJob{Spec: appsv1beta1.ImagePullJobSpec{ImagePullJobTemplate: *template.DeepCopy()}}
	appsv1beta1.SetDefaults_ImagePullJob(job)
	return &job.Spec.ImagePullJobTemplate
}
