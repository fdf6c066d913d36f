package imagepulljob

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// pullFaultScale is how large a run of TestImagePullJobsSurviveManagerKills is.
type pullFaultScale struct {
	// nodes is how many Nodes (and so NodeImages) there are; half are in pool a, half in b.
	nodes int
	// kills is how many times the manager is SIGKILLed; kube-apiserver is SIGKILLed once.
	kills int
	// parallelism is every job's.
	parallelism int32
	timeout     time.Duration
}

var (
	// The default is what fits CI's hour; BOSUN_LONG_FAULTS=1 runs the fan-out at the
	// size a fault in a real cluster's pre-pull meets (run by hand, recorded in
	// docs/reliability.md).
	defaultPullFaults = pullFaultScale{nodes: 200, kills: 3, parallelism: 50, timeout: 10 * time.Minute}
	longPullFaults    = pullFaultScale{nodes: 500, kills: 6, parallelism: 100, timeout: 20 * time.Minute}
)

// What the test pulls, and what a user pinned before it.
const (
	allImage, allTag     = "nginx", "1.25"   // job "all", every node
	poolAImage, poolATag = "busybox", "1.36" // job "pool-a"
	userImage, userTag   = "registry.example/user", "pinned"
	listTag              = "1"
	// jobTTL is ttlSecondsAfterFinished of job "all" and of the list job's template.
	jobTTL = 3
	// pullTime is how long a stand-in pull takes.
	pullTime = 500 * time.Millisecond
	// managerUserAgent is in the User-Agent of the manager's requests (the binary the tests
	// build is called cmd_bosun-controller-manager).
	managerUserAgent = "bosun-controller-manager/"
)

// listImages are the images of the list job, pulled on pool b.
var listImages = []string{"app/a", "app/b", "app/c"}

// sharedNode says whether node i carries a tag of allImage that a user pinned (owned by a
// ConfigMap) before job "all" came: the job joins the tag, which raises its version once.
func sharedNode(i int) bool { return i%10 == 5 }

// failingNode says whether the pulls of job "pool-a" fail on node i.
func failingNode(i int) bool { return i%25 == 0 }

// ImagePullJobs and an ImageListPullJob fan out over hundreds of NodeImages while the
// manager (imagepulljob, imagelistpulljob and nodeimage controllers, with their webhooks)
// is SIGKILLed and restarted several times and kube-apiserver once, at random progress
// points (seeded; BOSUN_FAULT_SEED replays, BOSUN_LONG_FAULTS=1 runs 2,000 nodes and 8
// manager kills). Stand-in node agents report every pull (Pulling, then Succeeded, or
// Failed for job "pool-a" on every 25th node). Every NodeImage first holds a tag a user
// pinned (no owner), every 10th also a tag of job "all"'s image a ConfigMap owns. Jobs:
// "all" (every node, ttlSecondsAfterFinished 3), "pool-a" (half the nodes), and a list job
// of 3 images on the other half (ttlSecondsAfterFinished 3, its own and its children's,
// which the children must not follow). At the end: every job's counters exactly what the
// nodes are; "all" and the list job deleted once each, by the manager, after their TTL, and
// the tags of "all" pruned but where the ConfigMap owns them too; the list job had exactly
// one child per image, created once and never deleted (no garbage collector runs, so they
// outlive it); every NodeImage holds exactly the tags it should. From etcd's history of
// every NodeImage: no tag was ever removed and added again, its version and createdAt never
// changed but once where a job joined a tag others owned, no owner was dropped and added
// again. From the audit log: the manager wrote each NodeImage's spec no more often than
// the spec changed (no write repeated after a restart).
func TestImagePullJobsSurviveManagerKills(t *testing.T) {
	scale := defaultPullFaults
	if framework.LongFaults() {
		scale = longPullFaults
	}
	seed := framework.FaultSeed(t)
	t.Logf("fault seed %d (replay with %s=%d); %d nodes, %d manager kills and 1 kube-apiserver kill",
		seed, framework.FaultSeedEnv, seed, scale.nodes, scale.kills)
	began := time.Now()

	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
	e := &pullFaultsEnv{testEnv: &testEnv{framework.NewTestEnv(t, cp, framework.EnvOptions{Timeout: scale.timeout, WaitTimeout: 3 * time.Minute, Audit: true})}}
	selector := framework.OwnerNamespaceLabel + "=" + e.Namespace
	list, err := e.Bosun.AppsV1beta1().NodeImages().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	history := framework.WatchEtcdHistory[*appsv1beta1.NodeImage](t, e.Ctx, cp, "/registry/apps.kruise.io/nodeimages/", revisionOf(t, list.ResourceVersion))
	// The jobs deleted after their TTL may go too soon after their completion for a poll
	// to see them completed; etcd's history keeps their last state.
	e.jobs = framework.WatchEtcdHistory[*appsv1beta1.ImagePullJob](t, e.Ctx, cp, "/registry/apps.kruise.io/imagepulljobs/"+e.Namespace+"/", revisionOf(t, list.ResourceVersion))
	e.listJobs = framework.WatchEtcdHistory[*appsv1beta1.ImageListPullJob](t, e.Ctx, cp, "/registry/apps.kruise.io/imagelistpulljobs/"+e.Namespace+"/", revisionOf(t, list.ResourceVersion))

	manager := e.startManagerWith(t, "imagepulljob-controller,nodeimage-controller,imagelistpulljob-controller")
	// The first test of a package builds the manager, which takes minutes on a loaded machine.
	t.Logf("control plane and manager up after %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	nodes := e.createManyNodes(t, scale.nodes)
	index := map[string]int{}
	for i, name := range nodes {
		index[name] = i
	}
	agents := framework.StartNodeImageAgents(t, e.Ctx, cp, framework.NodeImageAgentsOptions{
		// The long variant reports Pulling too, as the daemon does; the default one cannot
		// afford the extra status write per pull in CI's time.
		LabelSelector: selector, PullTime: pullTime, SkipPulling: !framework.LongFaults(),
		Fails: func(ni, image, _ string) bool { return image == poolAImage && failingNode(index[ni]) },
	})
	setUp := time.Now()
	t.Logf("%d Nodes and NodeImages set up in %v", len(nodes), setUp.Sub(began).Round(time.Millisecond))

	all := newPullJob("all", allImage+":"+allTag, map[string]string{framework.OwnerNamespaceLabel: e.Namespace}, scale.parallelism)
	all.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](jobTTL)
	all = e.createJob(t, all)
	poolA := e.createJob(t, newPullJob("pool-a", poolAImage+":"+poolATag, map[string]string{"pool": "a", framework.OwnerNamespaceLabel: e.Namespace}, scale.parallelism))
	listJob := &appsv1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "list", Namespace: e.Namespace},
		Spec: appsv1beta1.ImageListPullJobSpec{
			Images: imagesWithTag(listImages, listTag),
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "b", framework.OwnerNamespaceLabel: e.Namespace}}},
				Parallelism:      ptr.To(intstr.FromInt32(scale.parallelism)),
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, TTLSecondsAfterFinished: ptr.To[int32](jobTTL)},
			},
		},
	}
	listJob, err = e.Bosun.AppsV1beta1().ImageListPullJobs(e.Namespace).Create(e.Ctx, listJob, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ImageListPullJob: %v", err)
	}

	// Progress: the pulls the jobs have counted finished (a job's own view).
	half := scale.nodes / 2
	total := scale.nodes + half + len(listImages)*half
	faults := framework.NewFaultInjector(e.Env, manager, seed, scale.kills)
	faults.Inject(t, "fan-out", total, func(ctx context.Context) (int, error) {
		jobs, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, j := range jobs.Items {
			n += int(j.Status.Succeeded + j.Status.Failed)
		}
		return n, nil
	})

	// The end: "all" gone after its TTL, its tags pruned, the others complete.
	allDone, listDone := e.awaitEnd(t)
	want := func(i int) map[string][]string { return wantTags(i, poolA.UID, nil) }
	e.awaitNodeImages(t, nodes, want)
	e.WaitForNoWrites(t, 3*time.Second)
	if manager.Exited() {
		t.Fatalf("the manager exited: %s", manager.LogTail(40))
	}
	t.Logf("settled %v after the jobs were created", time.Since(setUp).Round(time.Millisecond))

	children := e.checkJobs(t, scale, nodes, poolA, listJob, listDone)
	if s := allDone.Status; s.Desired != int32(scale.nodes) || s.Succeeded != s.Desired || s.Failed != 0 || s.Active != 0 || s.Message != messageCompleted {
		t.Errorf("job all completed with desired %d, succeeded %d, failed %d, active %d, %q; want all %d nodes succeeded",
			s.Desired, s.Succeeded, s.Failed, s.Active, s.Message, scale.nodes)
	}
	e.checkTTL(t, faults, "imagepulljobs", "all", allDone.Status.CompletionTime)
	e.checkTTL(t, faults, "imagelistpulljobs", "list", listDone.Status.CompletionTime)
	childUIDs := map[string]types.UID{}
	for _, c := range children {
		childUIDs[c.Spec.Image] = c.UID
	}
	e.checkNodeImages(t, nodes, func(i int) map[string][]string { return wantTags(i, poolA.UID, childUIDs) })
	e.checkTagHistory(t, history, nodes, all.UID)
	e.checkSpecWrites(t, faults, history, nodes)
	t.Logf("%d pulls reported by the stand-in agents; %d faults in %v: %s", agents.Finished(), len(faults.Faults()),
		time.Since(began).Round(time.Second), faults.Summary())
}

// revisionOf is the etcd revision a resourceVersion of kube-apiserver stands for.
func revisionOf(t *testing.T, resourceVersion string) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", resourceVersion, err)
	}
	return rv
}

func imagesWithTag(images []string, tag string) []string {
	var out []string
	for _, image := range images {
		out = append(out, image+":"+tag)
	}
	return out
}

// startManagerWith is startManager with other controllers; it returns the manager.
func (e *testEnv) startManagerWith(t *testing.T, controllers string) *framework.ControllerManager {
	t.Helper()
	probe := newJob("admission-probe", "nginx", nil)
	send := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, framework.ControllerManagerOptions{
		Controllers: controllers,
		ExtraArgs:   []string{creationDelayFlag},
	}, framework.WebhookProbe{Webhook: webhookJobMutation, Send: send}, framework.WebhookProbe{Webhook: webhookJobValidation, Send: send})
}

// createManyNodes creates n Nodes, alternately labelled pool a and b, and their NodeImages
// (with the Nodes' labels, as the NodeImage controller makes them, and the tags pinnedTags
// says a user added), several at a time. Making the NodeImages rather than waiting for the
// controller to make them halves the writes of the set-up. It returns their names in
// order.
func (e *testEnv) createManyNodes(t *testing.T, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = e.NodeName(fmt.Sprintf("n%04d", i))
	}
	e.parallel(t, "creating Nodes and NodeImages", n, func(ctx context.Context, i int) error {
		pool := "a"
		if i%2 == 1 {
			pool = "b"
		}
		labels := map[string]string{"pool": pool, framework.OwnerNamespaceLabel: e.Namespace}
		node := e.NewNode(fmt.Sprintf("n%04d", i), labels, time.Time{})
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
		ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: labels}, Spec: appsv1beta1.NodeImageSpec{Images: pinnedTags(i)}}
		_, err := e.Bosun.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{})
		return err
	})
	return names
}

// parallel runs do for 0..n-1, 16 at a time, failing the test with the first error.
func (e *testEnv) parallel(t *testing.T, what string, n int, do func(ctx context.Context, i int) error) {
	t.Helper()
	errs := make([]error, n)
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = do(e.Ctx, i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// pinnedTags are the tags a user added to node i: userImage:userTag without owner on every
// node, and on every sharedNode a tag of allImage:allTag a ConfigMap owns.
func pinnedTags(i int) map[string]appsv1beta1.ImageSpec {
	images := map[string]appsv1beta1.ImageSpec{userImage: {Tags: []appsv1beta1.ImageTagSpec{{
		Tag: userTag, PullPolicy: &appsv1beta1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](86400)},
	}}}}
	if sharedNode(i) {
		images[allImage] = appsv1beta1.ImageSpec{Tags: []appsv1beta1.ImageTagSpec{{
			Tag: allTag, PullPolicy: &appsv1beta1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](86400)},
			OwnerReferences: []corev1.ObjectReference{userOwner()},
		}}}
	}
	return images
}

// userOwner is the owner of the pinned tags of allImage: no ImagePullJob, so the NodeImage
// controller keeps it.
func userOwner() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "pinned", UID: "0000-pinned"}
}

func newPullJob(name, image string, labels map[string]string, parallelism int32) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
			Selector:    &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: labels}},
			Parallelism: ptr.To(intstr.FromInt32(parallelism)),
		}},
	}
}

func (e *testEnv) createJob(t *testing.T, j *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJob {
	t.Helper()
	created, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).Create(e.Ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImagePullJob %s: %v", j.Name, err)
	}
	return created
}

// pullFaultsEnv is the environment of TestImagePullJobsSurviveManagerKills: the package's,
// and the histories of the jobs.
type pullFaultsEnv struct {
	*testEnv
	jobs     *framework.History[*appsv1beta1.ImagePullJob]
	listJobs *framework.History[*appsv1beta1.ImageListPullJob]
}

// lastCompleted returns the last version of an object that has a completionTime.
func lastCompleted[T any](versions []framework.Version[T], completed func(T) bool) (T, bool) {
	for i := len(versions) - 1; i >= 0; i-- {
		if v := versions[i]; v.Type != watch.Deleted && completed(v.Object) {
			return v.Object, true
		}
	}
	var zero T
	return zero, false
}

// awaitEnd waits until job pool-a has completed and job all and the list job have completed
// and then gone after their TTL (the list job's template is its own completion policy
// too), and returns those two as last seen, completed.
func (e *pullFaultsEnv) awaitEnd(t *testing.T) (all *appsv1beta1.ImagePullJob, list *appsv1beta1.ImageListPullJob) {
	t.Helper()
	var allGone, listGone, poolADone bool
	var seen string
	e.Await(t, "job all and the list job to complete and be deleted after their TTL, job pool-a to complete", func(ctx context.Context) (bool, error) {
		jobs := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace)
		if !allGone {
			j, err := jobs.Get(ctx, "all", metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				allGone = true
			case err != nil:
				return false, err
			case j.Status.CompletionTime != nil:
				all = j
			}
		}
		if !listGone {
			l, err := e.Bosun.AppsV1beta1().ImageListPullJobs(e.Namespace).Get(ctx, "list", metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				listGone = true
			case err != nil:
				return false, err
			case l.Status.CompletionTime != nil:
				list = l
			default:
				seen = fmt.Sprintf("list job %+v", l.Status)
			}
		}
		if !poolADone {
			j, err := jobs.Get(ctx, "pool-a", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			poolADone = j.Status.CompletionTime != nil
			seen = fmt.Sprintf("pool-a %+v", j.Status)
		}
		return allGone && listGone && poolADone, nil
	}, func() string {
		return fmt.Sprintf("all gone %v, list job gone %v, pool-a completed %v; %s", allGone, listGone, poolADone, seen)
	})
	var allOK, listOK bool
	all, allOK = lastCompleted(e.jobs.Versions(t, "all"), func(j *appsv1beta1.ImagePullJob) bool { return j.Status.CompletionTime != nil })
	list, listOK = lastCompleted(e.listJobs.Versions(t, "list"), func(l *appsv1beta1.ImageListPullJob) bool { return l.Status.CompletionTime != nil })
	if !allOK || !listOK {
		t.Fatalf("job all (%v) or the list job (%v) went without ever completing", allOK, listOK)
	}
	return all, list
}

// wantTags are the tags node i holds at the end, by "image:tag", each with the UIDs of its
// owners; with children nil, the list job's tags are only named, with any owner.
func wantTags(i int, poolA types.UID, children map[string]types.UID) map[string][]string {
	want := map[string][]string{userImage + ":" + userTag: nil}
	if sharedNode(i) {
		want[allImage+":"+allTag] = []string{string(userOwner().UID)}
	}
	if i%2 == 0 {
		want[poolAImage+":"+poolATag] = []string{string(poolA)}
	} else {
		for _, image := range listImages {
			key := image + ":" + listTag
			want[key] = []string{"*"}
			if children != nil {
				want[key] = []string{string(children[key])}
			}
		}
	}
	return want
}

// haveTags are the tags ni holds, by "image:tag", each with the UIDs of its owners.
func haveTags(ni *appsv1beta1.NodeImage) map[string][]string {
	have := map[string][]string{}
	for image, spec := range ni.Spec.Images {
		for _, tag := range spec.Tags {
			var owners []string
			for _, ref := range tag.OwnerReferences {
				owners = append(owners, string(ref.UID))
			}
			have[image+":"+tag.Tag] = owners
		}
	}
	return have
}

func tagsMatch(have, want map[string][]string) bool {
	if len(have) != len(want) {
		return false
	}
	for key, owners := range want {
		got, ok := have[key]
		if !ok {
			return false
		}
		if len(owners) == 1 && owners[0] == "*" {
			if len(got) != 1 {
				return false
			}
			continue
		}
		if !slices.Equal(got, owners) {
			return false
		}
	}
	return true
}

// awaitNodeImages waits until every NodeImage holds the tags want says. It does not fail
// the test when they never do: checkNodeImages names each that does not, and the checks
// after it still run.
func (e *testEnv) awaitNodeImages(t *testing.T, nodes []string, want func(i int) map[string][]string) {
	t.Helper()
	err := framework.WaitFor(e.Ctx, 3*time.Minute, "every NodeImage to hold exactly its tags", func(ctx context.Context) (bool, error) {
		list, err := e.Bosun.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{LabelSelector: framework.OwnerNamespaceLabel + "=" + e.Namespace})
		if err != nil {
			return false, nil
		}
		return len(e.offNodeImages(list.Items, nodes, want)) == 0, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// checkNodeImages checks that every NodeImage holds exactly the tags want says.
func (e *testEnv) checkNodeImages(t *testing.T, nodes []string, want func(i int) map[string][]string) {
	t.Helper()
	list, err := e.Bosun.AppsV1beta1().NodeImages().List(e.Ctx, metav1.ListOptions{LabelSelector: framework.OwnerNamespaceLabel + "=" + e.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range e.offNodeImages(list.Items, nodes, want) {
		t.Error(off)
	}
}

func (e *testEnv) offNodeImages(items []appsv1beta1.NodeImage, nodes []string, want func(i int) map[string][]string) []string {
	byName := map[string]*appsv1beta1.NodeImage{}
	for i := range items {
		byName[items[i].Name] = &items[i]
	}
	var off []string
	for i, name := range nodes {
		ni := byName[name]
		if ni == nil {
			off = append(off, fmt.Sprintf("NodeImage %s is missing", name))
			continue
		}
		if have, w := haveTags(ni), want(i); !tagsMatch(have, w) {
			off = append(off, fmt.Sprintf("NodeImage %s holds tags (with owner UIDs) %v, want %v", name, have, w))
		}
	}
	return off
}

// checkJobs checks the counters of job pool-a, of the list job and of its children, and
// that the list job has exactly one child per image, created once (audit log) and never
// deleted. It returns the children.
func (e *testEnv) checkJobs(t *testing.T, scale pullFaultScale, nodes []string, poolA *appsv1beta1.ImagePullJob, listJob, l *appsv1beta1.ImageListPullJob) []appsv1beta1.ImagePullJob {
	t.Helper()
	half := scale.nodes / 2
	var failedNodes []string
	for i, name := range nodes {
		if i%2 == 0 && failingNode(i) {
			failedNodes = append(failedNodes, name)
		}
	}
	slices.Sort(failedNodes)
	j, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).Get(e.Ctx, poolA.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := j.Status; s.Desired != int32(half) || s.Succeeded != int32(half-len(failedNodes)) || s.Failed != int32(len(failedNodes)) ||
		s.Active != 0 || s.CompletionTime == nil || s.Message != messageCompleted || !slices.Equal(s.FailedNodes, failedNodes) {
		t.Errorf("job pool-a: status desired %d, succeeded %d, failed %d, active %d, completed %v, %q, failed nodes %v; want %d, %d, %d, 0, completed, %q, %v",
			s.Desired, s.Succeeded, s.Failed, s.Active, s.CompletionTime != nil, s.Message, s.FailedNodes,
			half, half-len(failedNodes), len(failedNodes), messageCompleted, failedNodes)
	}

	n := int32(len(listImages))
	if s := l.Status; s.Desired != n || s.Completed != n || s.Succeeded != n || s.Active != 0 || s.CompletionTime == nil || len(s.FailedImageStatuses) != 0 {
		t.Errorf("list job: status %+v, want desired, completed and succeeded %d, none active or failed, completed", s, n)
	}
	jobs, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var children []appsv1beta1.ImagePullJob
	images := map[string]int{}
	for _, c := range jobs.Items {
		if ref := metav1.GetControllerOf(&c); ref == nil || ref.UID != listJob.UID {
			continue
		}
		children = append(children, c)
		images[c.Spec.Image]++
		if s := c.Status; s.Desired != int32(half) || s.Succeeded != int32(half) || s.Failed != 0 || s.Active != 0 || s.CompletionTime == nil {
			t.Errorf("child %s (%s): status desired %d, succeeded %d, failed %d, active %d, completed %v; want %d succeeded of %d, completed",
				c.Name, c.Spec.Image, s.Desired, s.Succeeded, s.Failed, s.Active, s.CompletionTime != nil, half, half)
		}
	}
	for _, image := range imagesWithTag(listImages, listTag) {
		if images[image] != 1 {
			t.Errorf("the list job has %d children for image %s, want exactly 1", images[image], image)
		}
	}
	if len(children) != len(listImages) {
		t.Errorf("the list job has %d children, want %d", len(children), len(listImages))
	}

	writes, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == "imagepulljobs" && ev.ObjectRef.Namespace == e.Namespace &&
			ev.ObjectRef.Subresource == "" && (ev.Verb == "create" || ev.Verb == "delete") && strings.Contains(ev.UserAgent, managerUserAgent)
	})
	if err != nil {
		t.Fatal(err)
	}
	created, deleted := map[string]int{}, map[string]int{}
	for _, w := range writes {
		if w.Code != http.StatusCreated && w.Code != http.StatusOK {
			continue
		}
		if w.Verb == "create" {
			created[w.Name]++
		} else {
			deleted[w.Name]++
		}
	}
	childNames := sets.New[string]()
	for _, c := range children {
		childNames.Insert(c.Name)
		if created[c.Name] > 1 {
			t.Errorf("child %s was created %d times", c.Name, created[c.Name])
		}
	}
	for name, n := range created {
		if !childNames.Has(name) {
			t.Errorf("the manager created ImagePullJob %s (%d times), which is none of the list job's children", name, n)
		}
	}
	for name := range deleted {
		if name != "all" {
			t.Errorf("the manager deleted ImagePullJob %s; only job all, after its TTL, was to be deleted", name)
		}
	}
	t.Logf("the manager created %d ImagePullJobs (children) and deleted %v", len(created), deleted)
	return children
}

// checkTTL checks that the object name of resource was deleted once, by the manager, no
// earlier than jobTTL after its completion.
func (e *testEnv) checkTTL(t *testing.T, faults *framework.FaultInjector, resource, name string, completed *metav1.Time) {
	t.Helper()
	deletes, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && ev.ObjectRef.Namespace == e.Namespace &&
			ev.ObjectRef.Name == name && ev.Verb == "delete" && strings.Contains(ev.UserAgent, managerUserAgent)
	})
	if err != nil {
		t.Fatal(err)
	}
	var ok []framework.Request
	for _, d := range deletes {
		if d.Code == http.StatusOK || d.Code == http.StatusAccepted {
			ok = append(ok, d)
		}
	}
	// completionTime has whole seconds.
	expiry := completed.Add(jobTTL * time.Second)
	switch {
	case len(ok) > 1:
		t.Errorf("%s %s was deleted %d times, want once: %+v", resource, name, len(ok), ok)
	case len(ok) == 0 && !faults.DuringAPIServerKill(expiry):
		t.Errorf("no delete of %s %s by the manager is audited", resource, name)
	case len(ok) == 1 && ok[0].Received.Before(expiry.Add(-time.Second)):
		t.Errorf("%s %s was deleted at %v, before its TTL of %d s after its completion at %v", resource, name, ok[0].Received, jobTTL, completed)
	}
}

// tagKey names one tag of one NodeImage.
type tagKey struct{ image, tag string }

// checkTagHistory checks every version of every NodeImage the watch saw, from the first that
// holds the pinned tag on: a tag once there stays, but for job "all"'s after the job is gone
// (where it was the only owner); its version and createdAt never change, but once on a
// shared node, when job "all" joined; no owner is removed and added again, and only job
// "all" is ever removed.
func (e *testEnv) checkTagHistory(t *testing.T, history *framework.History[*appsv1beta1.NodeImage], nodes []string, allUID types.UID) {
	t.Helper()
	type tagState struct {
		version   int64
		createdAt metav1.Time
		owners    sets.Set[types.UID]
		removed   sets.Set[types.UID]
		changes   int
		gone      bool
	}
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	versions := 0
	for i, name := range nodes {
		states := map[tagKey]*tagState{}
		pinned := false
		for _, v := range history.Versions(t, name) {
			ni := v.Object
			if _, ok := ni.Spec.Images[userImage]; ok {
				pinned = true
			}
			if !pinned || v.Type == watch.Deleted {
				continue
			}
			versions++
			present := map[tagKey]bool{}
			for image, spec := range ni.Spec.Images {
				for _, tag := range spec.Tags {
					key := tagKey{image, tag.Tag}
					present[key] = true
					owners := sets.New[types.UID]()
					for _, ref := range tag.OwnerReferences {
						owners.Insert(ref.UID)
					}
					created := metav1.Time{}
					if tag.CreatedAt != nil {
						created = *tag.CreatedAt
					}
					st := states[key]
					if st == nil {
						states[key] = &tagState{version: tag.Version, createdAt: created, owners: owners, removed: sets.New[types.UID]()}
						continue
					}
					if st.gone {
						report("NodeImage %s: tag %s:%s was removed and added again (etcd revision %d)", name, image, tag.Tag, v.Revision)
						st.gone = false
					}
					if tag.Version != st.version || !created.Equal(&st.createdAt) {
						st.changes++
						if st.changes > 1 || !sharedNode(i) || key != (tagKey{allImage, allTag}) || tag.Version != st.version+1 {
							report("NodeImage %s: tag %s:%s went from version %d (created %v) to %d (created %v) (etcd revision %d)", name, image, tag.Tag,
								st.version, st.createdAt, tag.Version, created, v.Revision)
						}
						st.version, st.createdAt = tag.Version, created
					}
					for uid := range st.owners.Difference(owners) {
						st.removed.Insert(uid)
						if uid != allUID {
							report("NodeImage %s: tag %s:%s lost its owner %s (etcd revision %d)", name, image, tag.Tag, uid, v.Revision)
						}
					}
					for uid := range owners.Difference(st.owners) {
						if st.removed.Has(uid) {
							report("NodeImage %s: tag %s:%s got its owner %s back after it was removed (etcd revision %d)", name, image, tag.Tag, uid, v.Revision)
						}
					}
					st.owners = owners
				}
			}
			for key, st := range states {
				if !present[key] && !st.gone {
					st.gone = true
					if !st.owners.Equal(sets.New(allUID)) {
						report("NodeImage %s: tag %s:%s (owners %v) was removed (etcd revision %d)", name, key.image, key.tag, sets.List(st.owners), v.Revision)
					}
				}
			}
		}
		if !pinned {
			report("NodeImage %s: the watch never saw the pinned tag", name)
		}
	}
	t.Logf("%d versions of %d NodeImages watched", versions, len(nodes))
	for _, p := range problems {
		t.Error(p)
	}
}

// checkSpecWrites compares, per NodeImage, the spec writes of the manager the audit log
// shows with the spec changes etcd's history shows after the NodeImage's creation: a write that changed nothing
// (repeated after a restart) would make more writes than changes. A write the API server
// carried out but did not log before its SIGKILL makes fewer.
func (e *testEnv) checkSpecWrites(t *testing.T, faults *framework.FaultInjector, history *framework.History[*appsv1beta1.NodeImage], nodes []string) {
	t.Helper()
	writes, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == "nodeimages" && ev.ObjectRef.Subresource == "" &&
			ev.Verb == "update" && strings.Contains(ev.UserAgent, managerUserAgent)
	})
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, w := range writes {
		if w.Code == http.StatusOK {
			written[w.Name]++
		}
	}
	var totalWrites, totalChanges, fewer int
	for _, name := range nodes {
		changes := 0
		var last *appsv1beta1.NodeImage
		for _, v := range history.Versions(t, name) {
			ni := v.Object
			if last != nil {
				if _, pinned := last.Spec.Images[userImage]; pinned && !equality.Semantic.DeepEqual(last.Spec, ni.Spec) {
					changes++
				}
			}
			last = ni
		}
		totalWrites += written[name]
		totalChanges += changes
		switch {
		case written[name] > changes:
			t.Errorf("NodeImage %s: the manager wrote its spec %d times for %d changes", name, written[name], changes)
		case written[name] < changes:
			fewer++
			if !faults.APIServerKilled() {
				t.Errorf("NodeImage %s: %d spec changes, but only %d writes of the manager are audited", name, changes, written[name])
			}
		}
	}
	t.Logf("the manager wrote NodeImage specs %d times for %d changes (%d NodeImages with a write unaudited at the kube-apiserver kill)", totalWrites, totalChanges, fewer)
	// Only the writes in flight when kube-apiserver was killed can be missing: a few sync
	// rounds of fanOutWrites (16) at most.
	if fewer > 64 {
		t.Errorf("%d NodeImages have spec changes the audit log has no write of the manager for; more than a kube-apiserver kill can cut off", fewer)
	}
}
