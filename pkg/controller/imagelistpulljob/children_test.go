package imagelistpulljob

import (
	"slices"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/utils/ptr"
)

func names(jobs []*appsv1beta1.ImagePullJob) []string {
	var out []string
	for _, job := range jobs {
		out = append(out, job.Name)
	}
	slices.Sort(out)
	return out
}

func TestPlanChildren(t *testing.T) {
	listJob := newListJob("list", []string{"a", "b", "c", "d", "e"})
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	changed := listJob.DeepCopy()
	changed.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](60)

	labelled := newChildOf(listJob, "child-a", "a", hash, t0)
	otherHashSameTemplate := newChildOf(listJob, "child-b", "b", "other", t0)
	unlabelledSameTemplate := newChildOf(listJob, "child-c", "c", "", t0)
	otherTemplate := newChildOf(changed, "child-d", "d", "other", t0)
	dropped := newChildOf(listJob, "child-x", "x", hash, t0)
	youngerDuplicate := newChildOf(listJob, "child-a2", "a", hash, t0.Add(time.Minute))

	plan := planChildren(listJob, []*appsv1beta1.ImagePullJob{
		youngerDuplicate, dropped, otherTemplate, unlabelledSameTemplate, otherHashSameTemplate, labelled,
	}, hash)

	var current []string
	for image, child := range plan.current {
		current = append(current, image+"="+child.Name)
	}
	slices.Sort(current)
	if want := []string{"a=child-a", "b=child-b", "c=child-c"}; !slices.Equal(current, want) {
		t.Errorf("current %v, want %v", current, want)
	}
	if got, want := names(plan.relabel), []string{"child-b", "child-c"}; !slices.Equal(got, want) {
		t.Errorf("relabel %v, want %v", got, want)
	}
	if want := []string{"d", "e"}; !slices.Equal(plan.create, want) {
		t.Errorf("create %v, want %v (spec order)", plan.create, want)
	}
	if got, want := names(plan.remove), []string{"child-a2", "child-d", "child-x"}; !slices.Equal(got, want) {
		t.Errorf("remove %v, want %v", got, want)
	}
}

// A child keeps being current when only defaulting tells it from the template: the
// ImagePullJob webhook adds imagePullPolicy, which a list job's template lacks.
func TestIsCurrentDefaultsBoth(t *testing.T) {
	listJob := newListJob("list", []string{"a"})
	template := defaultedTemplate(&listJob.Spec.ImagePullJobTemplate)
	child := newChildOf(listJob, "child", "a", "", t0)
	if child.Spec.ImagePullPolicy != appsv1beta1.PullIfNotPresent || listJob.Spec.ImagePullPolicy != "" {
		t.Fatalf("fixture: child imagePullPolicy %q, list job %q", child.Spec.ImagePullPolicy, listJob.Spec.ImagePullPolicy)
	}
	if !isCurrent(child, template, "h") {
		t.Error("a child equal to the template once defaulted is not current")
	}
	child.Spec.ImagePullPolicy = appsv1beta1.PullAlways
	if isCurrent(child, template, "h") {
		t.Error("a child pulling with another policy is current")
	}
	child.Labels = map[string]string{hashLabel: "h"}
	if !isCurrent(child, template, "h") {
		t.Error("a child labelled with the hash is not current")
	}
}
