package imagepulljob

import (
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
)

// withTag returns a copy of ni holding image:tag owned by the given jobs, with a status of
// phase (none when empty).
func withTag(ni *appsv1beta1.NodeImage, image, tag string, phase appsv1beta1.ImagePullPhase, owners ...*appsv1beta1.ImagePullJob) *appsv1beta1.NodeImage {
	ni = ni.DeepCopy()
	if ni.Spec.Images == nil {
		ni.Spec.Images = map[string]appsv1beta1.ImageSpec{}
	}
	var refs []corev1.ObjectReference
	for _, job := range owners {
		refs = append(refs, jobutil.OwnerReference(job))
	}
	spec := ni.Spec.Images[image]
	spec.Tags = append(spec.Tags, appsv1beta1.ImageTagSpec{Tag: tag, OwnerReferences: refs})
	ni.Spec.Images[image] = spec
	if phase != "" {
		if ni.Status.ImageStatuses == nil {
			ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
		}
		st := ni.Status.ImageStatuses[image]
		st.Tags = append(st.Tags, appsv1beta1.ImageTagStatus{Tag: tag, Phase: phase})
		ni.Status.ImageStatuses[image] = st
	}
	return ni
}

func TestUpdateNodeImageQueuesOnlyOwnersOfChangedTags(t *testing.T) {
	a, b := newJob("a", "nginx"), newJob("b", "redis")
	byLabel := newJob("bylabel", "busybox", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}
	})
	byName := newJob("byname", "busybox", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n1"}}
	})
	f := newFixture(t, a, b, byLabel, byName)

	base := newNodeImage("n1", nil)
	base.ResourceVersion = "1"
	old := withTag(withTag(base, "nginx", "latest", appsv1beta1.ImagePhasePulling, a), "redis", "latest", appsv1beta1.ImagePhasePulling, b)

	for _, tc := range []struct {
		name   string
		change func(ni *appsv1beta1.NodeImage)
		want   []string
	}{
		{"status of a's tag", func(ni *appsv1beta1.NodeImage) {
			ni.Status.ImageStatuses["nginx"].Tags[0].Phase = appsv1beta1.ImagePhaseSucceeded
		}, []string{"ns/a"}},
		{"progress only", func(ni *appsv1beta1.NodeImage) {
			ni.Status.ImageStatuses["nginx"].Tags[0].Progress = 50
			ni.Status.Pulling = 2
		}, nil},
		{"b's owner reference dropped", func(ni *appsv1beta1.NodeImage) {
			delete(ni.Spec.Images, "redis")
		}, []string{"ns/b"}},
		{"labels", func(ni *appsv1beta1.NodeImage) {
			ni.Labels = map[string]string{"pool": "a"}
		}, []string{"ns/a", "ns/b", "ns/bylabel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			cur := old.DeepCopy()
			cur.ResourceVersion = "2"
			tc.change(cur)
			f.c.updateNodeImage(f.ctx, old, cur)
			got := f.queue.AddedKeys()
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// Owners are read by group and kind in any version: a tag owned through a v1alpha1
// reference queues its job; a reference to a kind of the same name in another group
// queues nothing.
func TestUpdateNodeImageQueuesOwnersOfAnyVersion(t *testing.T) {
	a := newJob("a", "nginx")
	f := newFixture(t, a)
	old := withTag(newNodeImage("n1", nil), "nginx", "latest", appsv1beta1.ImagePhasePulling)
	old.ResourceVersion = "1"
	alpha := jobutil.OwnerReference(a)
	alpha.APIVersion = "apps.kruise.io/v1alpha1"
	foreign := corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "ImagePullJob", Namespace: testNamespace, Name: "foreign", UID: "uid-foreign"}
	old.Spec.Images["nginx"].Tags[0].OwnerReferences = []corev1.ObjectReference{alpha, foreign}
	cur := old.DeepCopy()
	cur.ResourceVersion = "2"
	cur.Status.ImageStatuses["nginx"].Tags[0].Phase = appsv1beta1.ImagePhaseSucceeded

	f.c.updateNodeImage(f.ctx, old, cur)
	got := f.queue.AddedKeys()
	slices.Sort(got)
	if got = slices.Compact(got); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("queued %v, want [ns/a]", got)
	}
}

func TestPodEventsQueuePodSelectorJobs(t *testing.T) {
	job := newJob("pods", "nginx", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.PodSelector = &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	})
	f := newFixture(t, job, newJob("other", "nginx"))
	pod := newPod("web", "", map[string]string{"app": "web"}, corev1.PodPending)
	scheduled := pod.DeepCopy()
	scheduled.Spec.NodeName = "n1"

	f.c.updatePod(f.ctx, pod, pod.DeepCopy())
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("an unchanged pod queued %v", got)
	}
	f.c.updatePod(f.ctx, pod, scheduled)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/pods"}) {
		t.Errorf("scheduling queued %v, want [ns/pods]", got)
	}
}

func TestSecretEventsQueueJobs(t *testing.T) {
	f := newFixture(t, newJob("a", "nginx", withPullSecrets("reg")), newJob("b", "nginx"))
	f.c.addSecret(f.ctx, newSecret(testNamespace, "reg", "{}"))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("a source secret queued %v, want [ns/a]", got)
	}
	f.queue.Reset()
	cp := newSecret(secretsNamespace, "reg-abcdef", "{}")
	cp.Annotations = map[string]string{
		appsv1beta1.ImagePullSecretSourceKeyAnnotation:  "ns/reg",
		appsv1beta1.ImagePullSecretReferencesAnnotation: "ns/a,other/c",
	}
	f.c.deleteSecret(f.ctx, cp)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/a", "other/c"}) {
		t.Errorf("a copy queued %v, want its references", got)
	}
}
