package imagepulljob

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsinformers "github.com/bosun-dev/client-go/informers/externalversions/apps/v1beta1"
	appslisters "github.com/bosun-dev/client-go/listers/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
	"github.com/bosun-dev/bosun/pkg/controller/options"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

const (
	// ControllerName is the controller's canonical name and its client's name.
	ControllerName = "imagepulljob-controller"

	// ExpectationRequeue is how soon a job whose own writes the informers have not shown
	// yet is looked at again. NodeImage updates that change no tag status of the job queue
	// nothing, so this is what picks the job up once they are observed.
	ExpectationRequeue = 5 * time.Second

	// minDeadlineRequeue is the least delay before a job is looked at again for its
	// deadline.
	minDeadlineRequeue = time.Second
)

// Controller pulls the image of every ImagePullJob on its target nodes, a few at a time,
// through the nodes' NodeImages, and reports the job's progress.
type Controller struct {
	client           kubernetes.Interface
	bosunClient      bosunclientset.Interface
	clock            clock.Clock
	secretsNamespace string
	// randInt63n returns a random number in [0, n), to spread tag lifetimes.
	randInt63n func(n int64) int64

	jobs         appslisters.ImagePullJobLister
	nodeImages   appslisters.NodeImageLister
	pods         corelisters.PodLister
	secrets      corelisters.SecretLister
	namespaces   corelisters.NamespaceLister
	cachesSynced []cache.InformerSynced

	// The versions of the job itself, of secret copies and of NodeImages this controller
	// wrote for each job and the informers have not shown yet, by job key.
	jobVersions       *expectations.VersionStore
	secretVersions    *expectations.VersionStore
	nodeImageVersions *expectations.VersionStore

	queue workqueue.TypedRateLimitingInterface[string]
	// syncHandler is syncJob; tests may replace it to watch the worker loop.
	syncHandler queue.SyncFunc[string]

	// podEvents decides which jobs a pod event concerns (see jobPodHandlers).
	podEvents refmanager.PodHandlers[*appsv1beta1.ImagePullJob]
}

// NewController builds the ImagePullJob controller on the given informers. client writes
// the copies of pull secrets into secretsNamespace (where node agents read them);
// bosunClient writes jobs and NodeImages. Of the options it reads the clock and the queue
// wrapper.
func NewController(ctx context.Context,
	jobs appsinformers.ImagePullJobInformer, nodeImages appsinformers.NodeImageInformer,
	pods coreinformers.PodInformer, secrets coreinformers.SecretInformer, namespaces coreinformers.NamespaceInformer,
	client kubernetes.Interface, bosunClient bosunclientset.Interface, secretsNamespace string,
	opts ...options.Option) (*Controller, error) {
	settings := options.Apply(opts)
	if secretsNamespace == "" {
		secretsNamespace = appsv1beta1.DefaultImagePullSecretNamespace
	}
	c := &Controller{
		client:           client,
		bosunClient:      bosunClient,
		clock:            settings.Clock,
		secretsNamespace: secretsNamespace,
		randInt63n:       rand.Int64N,
		jobs:             jobs.Lister(),
		nodeImages:       nodeImages.Lister(),
		pods:             pods.Lister(),
		secrets:          secrets.Lister(),
		namespaces:       namespaces.Lister(),
		cachesSynced: []cache.InformerSynced{
			jobs.Informer().HasSynced, nodeImages.Informer().HasSynced, pods.Informer().HasSynced,
			secrets.Informer().HasSynced, namespaces.Informer().HasSynced,
		},
		queue: settings.WrapQueue(queue.New[string](queue.NameImagePullJob)),
	}
	c.syncHandler = c.syncJob
	c.podEvents = c.jobPodHandlers()
	c.jobVersions = expectations.NewVersionStore(c.clock, func(namespace, name string) (types.UID, string, bool) {
		job, err := c.jobs.ImagePullJobs(namespace).Get(name)
		if err != nil {
			return "", "", false
		}
		return job.UID, job.ResourceVersion, true
	})
	c.secretVersions = expectations.NewVersionStore(c.clock, func(namespace, name string) (types.UID, string, bool) {
		secret, err := c.secrets.Secrets(namespace).Get(name)
		if err != nil {
			return "", "", false
		}
		return secret.UID, secret.ResourceVersion, true
	})
	c.nodeImageVersions = expectations.NewVersionStore(c.clock, func(_, name string) (types.UID, string, bool) {
		ni, err := c.nodeImages.Get(name)
		if err != nil {
			return "", "", false
		}
		return ni.UID, ni.ResourceVersion, true
	})

	for _, r := range []struct {
		informer cache.SharedIndexInformer
		kind     string
		handlers informers.Handlers
	}{
		{jobs.Informer(), "ImagePullJob", informers.Handlers{Add: c.addJob, Update: c.updateJob, Delete: c.deleteJob}},
		{nodeImages.Informer(), "NodeImage", informers.Handlers{Add: c.addNodeImage, Update: c.updateNodeImage, Delete: c.deleteNodeImage}},
		{pods.Informer(), "Pod", informers.Handlers{Add: c.addPod, Update: c.updatePod, Delete: c.deletePod}},
		{secrets.Informer(), "Secret", informers.Handlers{Add: c.addSecret, Update: c.updateSecret, Delete: c.deleteSecret}},
	} {
		if err := informers.AddHandlers(ctx, r.informer, r.kind, r.handlers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run waits for the caches to sync, then processes jobs with workers workers until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	queue.RunController(ctx, ControllerName, c.queue, workers, c.cachesSynced, c.syncHandler)
}

func (c *Controller) enqueue(namespace, name string) {
	c.queue.Add(queue.KeyForRef(namespace, name))
}

func (c *Controller) addJob(ctx context.Context, obj any) {
	if job, ok := obj.(*appsv1beta1.ImagePullJob); ok {
		klog.FromContext(ctx).V(4).Info("ImagePullJob added", "imagePullJob", klog.KObj(job))
		c.enqueue(job.Namespace, job.Name)
	}
}

func (c *Controller) updateJob(ctx context.Context, _, cur any) {
	if job, ok := cur.(*appsv1beta1.ImagePullJob); ok {
		klog.FromContext(ctx).V(5).Info("ImagePullJob updated", "imagePullJob", klog.KObj(job))
		c.enqueue(job.Namespace, job.Name)
	}
}

func (c *Controller) deleteJob(ctx context.Context, obj any) {
	if job, ok := queue.FromTombstone[*appsv1beta1.ImagePullJob](obj); ok {
		klog.FromContext(ctx).V(4).Info("ImagePullJob deleted", "imagePullJob", klog.KObj(job))
		c.enqueue(job.Namespace, job.Name)
	}
}

// unfinishedJobs returns the jobs that may still add tags, those matching keep.
func (c *Controller) unfinishedJobs(ctx context.Context, namespace string, keep func(*appsv1beta1.ImagePullJob) bool) []*appsv1beta1.ImagePullJob {
	var (
		all []*appsv1beta1.ImagePullJob
		err error
	)
	if namespace == metav1.NamespaceAll {
		all, err = c.jobs.List(labels.Everything())
	} else {
		all, err = c.jobs.ImagePullJobs(namespace).List(labels.Everything())
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing ImagePullJobs")
		return nil
	}
	var out []*appsv1beta1.ImagePullJob
	for _, job := range all {
		if job.Status.CompletionTime == nil && job.DeletionTimestamp == nil && (keep == nil || keep(job)) {
			out = append(out, job)
		}
	}
	return out
}

func (c *Controller) enqueueJobs(jobs []*appsv1beta1.ImagePullJob) {
	for _, job := range jobs {
		c.enqueue(job.Namespace, job.Name)
	}
}

// addNodeImage queues every unfinished job: a new node may be one of their targets.
func (c *Controller) addNodeImage(ctx context.Context, obj any) {
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
		klog.FromContext(ctx).V(5).Info("NodeImage added", "nodeImage", klog.KObj(ni))
		c.enqueueJobs(c.unfinishedJobs(ctx, metav1.NamespaceAll, nil))
	}
}

// deleteNodeImage queues every unfinished job, one target fewer for those that had it,
// and the owners of its tags.
func (c *Controller) deleteNodeImage(ctx context.Context, obj any) {
	ni, ok := queue.FromTombstone[*appsv1beta1.NodeImage](obj)
	if !ok {
		return
	}
	klog.FromContext(ctx).V(5).Info("NodeImage deleted", "nodeImage", klog.KObj(ni))
	c.enqueueJobs(c.unfinishedJobs(ctx, metav1.NamespaceAll, nil))
	for key := range tagOwners(ni, nil) {
		c.queue.Add(key)
	}
}

// updateNodeImage queues only the jobs the change concerns: the owners of tags whose status
// changed, the owners whose references were dropped from a tag, and, when the node's labels
// changed, the jobs choosing nodes by label. Node agents rewrite NodeImage status often, and
// queueing every job on every write costs the whole cluster's jobs a sync per write.
func (c *Controller) updateNodeImage(ctx context.Context, old, cur any) {
	oldNI, ok1 := old.(*appsv1beta1.NodeImage)
	curNI, ok2 := cur.(*appsv1beta1.NodeImage)
	if !ok1 || !ok2 || oldNI.ResourceVersion == curNI.ResourceVersion {
		return
	}
	keys := sets.New[string]()
	changed := changedTagStatuses(oldNI, curNI)
	for key := range tagOwners(curNI, changed) {
		keys.Insert(key)
	}
	for key := range tagOwners(oldNI, changed) {
		keys.Insert(key)
	}
	// Owners the spec no longer names lost their tag: they must add it again.
	for key := range tagOwners(oldNI, nil).Difference(tagOwners(curNI, nil)) {
		keys.Insert(key)
	}
	if !labels.Equals(oldNI.Labels, curNI.Labels) {
		for _, job := range c.unfinishedJobs(ctx, metav1.NamespaceAll, selectsByLabels) {
			keys.Insert(queue.KeyForRef(job.Namespace, job.Name))
		}
	}
	if keys.Len() > 0 {
		klog.FromContext(ctx).V(5).Info("NodeImage updated", "nodeImage", klog.KObj(curNI), "imagePullJobs", sets.List(keys))
	}
	for key := range keys {
		c.queue.Add(key)
	}
}

// imageTag names one tag of one image of a NodeImage.
type imageTag struct{ image, tag string }

// changedTagStatuses returns the tags whose status phase or version differs between old
// and cur, appeared or disappeared.
func changedTagStatuses(old, cur *appsv1beta1.NodeImage) sets.Set[imageTag] {
	type state struct {
		phase   appsv1beta1.ImagePullPhase
		version int64
	}
	states := func(ni *appsv1beta1.NodeImage) map[imageTag]state {
		out := map[imageTag]state{}
		for image, status := range ni.Status.ImageStatuses {
			for _, t := range status.Tags {
				out[imageTag{image, t.Tag}] = state{t.Phase, t.Version}
			}
		}
		return out
	}
	before, after := states(old), states(cur)
	changed := sets.New[imageTag]()
	for k, s := range after {
		if b, ok := before[k]; !ok || b != s {
			changed.Insert(k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			changed.Insert(k)
		}
	}
	return changed
}

// tagOwners returns the keys of the ImagePullJobs owning tags of ni, of the tags in only
// when only is not nil.
func tagOwners(ni *appsv1beta1.NodeImage, only sets.Set[imageTag]) sets.Set[string] {
	keys := sets.New[string]()
	if only != nil && only.Len() == 0 {
		return keys
	}
	for image, spec := range ni.Spec.Images {
		for _, t := range spec.Tags {
			if only != nil && !only.Has(imageTag{image, t.Tag}) {
				continue
			}
			for _, ref := range t.OwnerReferences {
				if nodeimageutil.IsImagePullJobReference(ref) && ref.Name != "" {
					keys.Insert(queue.KeyForRef(ref.Namespace, ref.Name))
				}
			}
		}
	}
	return keys
}

// selectsByLabels reports whether the job's targets depend on NodeImage labels.
func selectsByLabels(job *appsv1beta1.ImagePullJob) bool {
	return job.Spec.PodSelector == nil && (job.Spec.Selector == nil || len(job.Spec.Selector.Names) == 0)
}

func (c *Controller) addPod(ctx context.Context, obj any) { c.podEvents.Add(ctx, obj) }

// updatePod queues the pod-selecting jobs of the pod's namespace that select it before or
// after, when what makes it a target changed: labels, node, phase or deletion.
func (c *Controller) updatePod(ctx context.Context, old, cur any) { c.podEvents.Update(ctx, old, cur) }

func (c *Controller) deletePod(ctx context.Context, obj any) { c.podEvents.Delete(ctx, obj) }

// jobPodHandlers says how pod events concern jobs: a pod's events queue the unfinished
// jobs whose pod selector matches it.
func (c *Controller) jobPodHandlers() refmanager.PodHandlers[*appsv1beta1.ImagePullJob] {
	return refmanager.PodHandlers[*appsv1beta1.ImagePullJob]{
		Kind:      jobKind,
		Selecting: c.podSelectorJobs,
		UpdateConcerns: func(old, cur *corev1.Pod) bool {
			return !labels.Equals(old.Labels, cur.Labels) || old.Spec.NodeName != cur.Spec.NodeName ||
				old.Status.Phase != cur.Status.Phase || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil)
		},
		Enqueue: func(key string) { c.queue.Add(key) },
	}
}

// podSelectorJobs returns the unfinished jobs of pod's namespace whose pod selector matches
// it.
func (c *Controller) podSelectorJobs(ctx context.Context, pod *corev1.Pod) []*appsv1beta1.ImagePullJob {
	return c.unfinishedJobs(ctx, pod.Namespace, func(job *appsv1beta1.ImagePullJob) bool {
		if job.Spec.PodSelector == nil {
			return false
		}
		selector, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
		return err == nil && selector.Matches(labels.Set(pod.Labels))
	})
}

func (c *Controller) addSecret(ctx context.Context, obj any) {
	if secret, ok := obj.(*corev1.Secret); ok {
		c.enqueueSecretJobs(ctx, secret)
	}
}

func (c *Controller) updateSecret(ctx context.Context, old, cur any) {
	oldSecret, ok1 := old.(*corev1.Secret)
	curSecret, ok2 := cur.(*corev1.Secret)
	if ok1 && ok2 && oldSecret.ResourceVersion != curSecret.ResourceVersion {
		c.enqueueSecretJobs(ctx, curSecret)
	}
}

func (c *Controller) deleteSecret(ctx context.Context, obj any) {
	if secret, ok := queue.FromTombstone[*corev1.Secret](obj); ok {
		c.enqueueSecretJobs(ctx, secret)
	}
}

// enqueueSecretJobs queues the jobs a secret concerns: for a copy, the jobs it names as
// its references; for a source, the unfinished jobs of its namespace that pull with it.
func (c *Controller) enqueueSecretJobs(ctx context.Context, secret *corev1.Secret) {
	if secret.Namespace == c.secretsNamespace {
		if _, isCopy := secret.Annotations[appsv1beta1.ImagePullSecretSourceKeyAnnotation]; isCopy {
			for _, key := range secretReferences(secret) {
				c.queue.Add(key)
			}
			return
		}
	}
	c.enqueueJobs(c.unfinishedJobs(ctx, secret.Namespace, func(job *appsv1beta1.ImagePullJob) bool {
		return slices.Contains(job.Spec.PullSecrets, secret.Name)
	}))
}

// secretReferences returns the job keys a copied secret's references annotation lists.
func secretReferences(secret *corev1.Secret) []string {
	value := secret.Annotations[appsv1beta1.ImagePullSecretReferencesAnnotation]
	if value == "" {
		return nil
	}
	var keys []string
	for _, key := range strings.Split(value, ",") {
		if key = strings.TrimSpace(key); key != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// jobKind is the kind of the jobs, the name pod events log them under.
const jobKind = "ImagePullJob"

// listJobKind is the kind of the owner whose children outlive their own time to live.
const listJobKind = "ImageListPullJob"

// ownsTag reports whether tag has an owner reference to the job with uid. A reference of
// any version counts: a tag an older writer gave the job in v1alpha1 is the job's, and is
// not written again just to name the job in v1beta1.
func ownsTag(tag *appsv1beta1.ImageTagSpec, uid types.UID) bool {
	return slices.ContainsFunc(tag.OwnerReferences, func(ref corev1.ObjectReference) bool {
		return nodeimageutil.RefersToImagePullJob(ref, uid)
	})
}

// soleOwner reports whether the job with uid is the only owner of tag.
func soleOwner(tag *appsv1beta1.ImageTagSpec, uid types.UID) bool {
	return len(tag.OwnerReferences) == 1 && nodeimageutil.RefersToImagePullJob(tag.OwnerReferences[0], uid)
}

// semanticEqual is apiequality.Semantic.DeepEqual, short.
func semanticEqual(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }
