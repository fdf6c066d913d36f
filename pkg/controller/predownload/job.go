package predownload

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

const (
	// backoffLimit is the number of retries of each node's pull: the pods pull the image
	// anyway when they start, so a pre-download is not worth many attempts.
	backoffLimit int32 = 1
	// ttlSecondsAfterFinished keeps a finished job around long enough to be looked at, then
	// lets the ImagePullJob controller delete it, should the rollout never complete.
	ttlSecondsAfterFinished int32 = 600
)

// Owner is a workload that controls pre-download jobs. Events are recorded on it, so its
// kind and API version must be set: the recorder's scheme may not know apps.kruise.io.
type Owner interface {
	metav1.Object
	runtime.Object
}

// Settings are how the nodes pull a revision's images.
type Settings struct {
	// Parallelism is how many nodes pull at once.
	Parallelism int32
	// TimeoutSeconds bounds each pull.
	TimeoutSeconds int32
}

// Rollout is a workload's revision whose images are pulled ahead, with everything its
// jobs are made from.
type Rollout struct {
	// Owner is the workload, which controls the jobs; Kind is its kind in the version its
	// owner references name.
	Owner Owner
	Kind  schema.GroupVersionKind
	// Selector and Template are the workload's: the jobs select its pods, and take their
	// labels, annotations and pull secrets from its template.
	Selector *metav1.LabelSelector
	Template *corev1.PodTemplateSpec
	// Revision is the ControllerRevision whose images are pulled, Hash its hash: the pods
	// of the revision carry either in their controller-revision-hash label.
	Revision *appsv1.ControllerRevision
	Hash     string
	// HashLabel is the label that carries Hash on the jobs.
	HashLabel string
	Settings
}

// ContainerImage is a container of a template whose image needs pulling.
type ContainerImage struct {
	Container, Image string
}

// NewImages returns, in template order, the containers of template whose image no
// container of the same name in the old revisions had: the images some node is sure to
// lack. An old revision whose data cannot be read is passed over.
func NewImages(ctx context.Context, template *corev1.PodTemplateSpec, old []*appsv1.ControllerRevision) []ContainerImage {
	known := map[ContainerImage]bool{}
	for _, revision := range old {
		oldTemplate, err := kruisepod.TemplateFromRevisionData(revision.Data.Raw)
		if err != nil {
			klog.FromContext(ctx).Info("Cannot read an old revision's template; its images count as absent",
				"controllerRevision", klog.KObj(revision), "err", err)
			continue
		}
		for _, container := range oldTemplate.Spec.Containers {
			known[ContainerImage{container.Name, container.Image}] = true
		}
	}
	var images []ContainerImage
	for _, container := range template.Spec.Containers {
		if ci := (ContainerImage{container.Name, container.Image}); !known[ci] {
			images = append(images, ci)
		}
	}
	return images
}

// newJob returns the ImagePullJob that pulls ci's image on the nodes of r's pods not yet
// on r's revision.
func newJob(r Rollout, ci ContainerImage) *appsv1beta1.ImagePullJob {
	selector := r.Selector.DeepCopy()
	// Pods may carry the revision's name or its hash alone in the label.
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key:      appsv1beta1.ControllerRevisionHashLabelKey,
		Operator: metav1.LabelSelectorOpNotIn,
		Values:   []string{r.Revision.Name, r.Hash},
	})
	// Objects a workload owns carry its template labels, so that its selector matches them.
	jobLabels := maps.Clone(r.Template.Labels)
	if jobLabels == nil {
		jobLabels = map[string]string{}
	}
	jobLabels[r.HashLabel] = r.Hash
	var pullSecrets []string
	for _, secret := range r.Template.Spec.ImagePullSecrets {
		pullSecrets = append(pullSecrets, secret.Name)
	}
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            r.Revision.Name + "-" + ci.Container,
			Namespace:       r.Owner.GetNamespace(),
			Labels:          jobLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(r.Owner, r.Kind)},
		},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: ci.Image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				PullSecrets: pullSecrets,
				PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: *selector},
				Parallelism: ptr.To(intstr.FromInt32(r.Parallelism)),
				PullPolicy: &appsv1beta1.PullPolicy{
					TimeoutSeconds: ptr.To(r.TimeoutSeconds),
					BackoffLimit:   ptr.To(backoffLimit),
				},
				CompletionPolicy: appsv1beta1.CompletionPolicy{
					Type:                    appsv1beta1.Always,
					TTLSecondsAfterFinished: ptr.To(ttlSecondsAfterFinished),
				},
				// Runtimes may choose how to pull (a snapshotter, a sandbox) by the
				// pod's metadata; the pull ahead should look like the pods' own.
				SandboxConfig: &appsv1beta1.SandboxConfig{
					Labels:      maps.Clone(jobLabels),
					Annotations: maps.Clone(r.Template.Annotations),
				},
			},
		},
	}
}
