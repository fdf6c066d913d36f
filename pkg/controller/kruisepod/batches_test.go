package kruisepod

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

var batchT0 = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// priorityPod is pod p at revision r1, as the pod webhook leaves it: nginx (priority 0) and
// redis (priority 10) with barrier envs, plain without, all running their v1 images.
func priorityPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p",
			Labels:      map[string]string{"a": "b", appsv1beta1.ControllerRevisionHashLabelKey: "r1"},
			Annotations: map[string]string{"config": "foo"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "nginx", Image: "nginx:1", Env: []corev1.EnvVar{BarrierEnv("p", 0)}},
			{Name: "redis", Image: "redis:1", Env: []corev1.EnvVar{BarrierEnv("p", 10)}},
			{Name: "plain", Image: "plain:1"},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "nginx", Image: "nginx:1", ImageID: "sha-n1", Ready: true},
			{Name: "redis", Image: "redis:1", ImageID: "sha-r1", Ready: true},
			{Name: "plain", Image: "plain:1", ImageID: "sha-p1", Ready: true},
		}},
	}
}

func images(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func stateOf(t *testing.T, pod *corev1.Pod) *InPlaceUpdateState {
	t.Helper()
	state, err := ReadInPlaceUpdateState(pod)
	if err != nil || state == nil {
		t.Fatalf("ReadInPlaceUpdateState = %+v, %v", state, err)
	}
	return state
}

// The expected states were written by OpenKruise v1.9.0's in-place update
// (pkg/util/inplaceupdate's PatchSpecToPod with a fake clock, then again with the next*
// of the state it wrote) for the same pod and changes, in a scratch program outside this
// repository: a controller taking over between two batches reads and writes the same bytes.
func TestBatchesMatchOpenKruise(t *testing.T) {
	pod := priorityPod()
	update := &InPlaceUpdate{
		Images: map[string]string{"nginx": "nginx:2", "redis": "redis:2", "plain": "plain:2"},
		ContainerRefMetadata: map[string]RefMetadata{
			"redis": {Annotations: map[string]string{"config": "bar"}},
			"nginx": {Labels: map[string]string{"v": "2"}},
		},
		UpdateEnvFromMetadata: true,
	}
	if !ApplyInPlaceUpdate(pod, update, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	const first = `{"revision":"r2","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":{"plain":{"imageID":"sha-p1"},"redis":{"imageID":"sha-r1"}},` +
		`"updateEnvFromMetadata":true,"updateImages":true,"nextContainerImages":{"nginx":"nginx:2"},` +
		`"nextContainerRefMetadata":{"nginx":{"creationTimestamp":null,"labels":{"v":"2"}}},"preCheckBeforeNext":{"containersRequiredReady":["plain","redis"]},` +
		`"containerBatchesRecord":[{"timestamp":"2026-03-01T12:00:00Z","containers":["plain","redis"]}]}`
	if got := pod.Annotations[appsv1beta1.InPlaceUpdateStateKey]; got != first {
		t.Errorf("state after the first batch:\n got %s\nwant %s", got, first)
	}
	if got := images(pod); !slices.Equal(got, []string{"nginx:1", "redis:2", "plain:2"}) || pod.Annotations["config"] != "bar" || pod.Labels["v"] != "" {
		t.Errorf("first batch: images %v, config %q, label v %q; want nginx left alone, redis's annotation set", got, pod.Annotations["config"], pod.Labels["v"])
	}
	state := stateOf(t, pod)
	if InPlaceUpdateCompleted(pod, state) {
		t.Error("completed with a batch pending")
	}

	pod.Status.ContainerStatuses[1].ImageID = "sha-r2"
	next, err := ApplyNextBatch(pod, state, metav1.NewTime(batchT0.Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	const second = `{"revision":"r2","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":{"nginx":{"imageID":"sha-n1"},"plain":{"imageID":"sha-p1"},"redis":{"imageID":"sha-r1"}},` +
		`"updateEnvFromMetadata":true,"updateImages":true,` +
		`"containerBatchesRecord":[{"timestamp":"2026-03-01T12:00:00Z","containers":["plain","redis"]},{"timestamp":"2026-03-01T12:01:00Z","containers":["nginx"]}]}`
	if got := next.Annotations[appsv1beta1.InPlaceUpdateStateKey]; got != second {
		t.Errorf("state after the second batch:\n got %s\nwant %s", got, second)
	}
	if got := images(next); !slices.Equal(got, []string{"nginx:2", "redis:2", "plain:2"}) || next.Labels["v"] != "2" {
		t.Errorf("second batch: images %v, label v %q", got, next.Labels["v"])
	}
	if images(pod)[0] != "nginx:1" {
		t.Error("ApplyNextBatch changed the pod it was given")
	}
}

// The next batch is due once the containers updated so far run their new images and are
// ready, and not during a grace period.
func TestNextBatchDue(t *testing.T) {
	pod := priorityPod()
	if !ApplyInPlaceUpdate(pod, &InPlaceUpdate{Images: map[string]string{"nginx": "nginx:2", "redis": "redis:2"}}, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	state := stateOf(t, pod)
	if got := state.ContainerBatchesRecord; len(got) != 1 || !slices.Equal(got[0].Containers, []string{"redis"}) {
		t.Fatalf("batches %+v, want redis alone first", got)
	}
	if NextBatchDue(pod, state) {
		t.Error("due before redis restarted")
	}
	redis := &pod.Status.ContainerStatuses[1]
	redis.ImageID, redis.Image, redis.Ready = "sha-r2", "redis:2", false
	if NextBatchDue(pod, state) {
		t.Error("due before redis is ready")
	}
	redis.Ready = true
	if !NextBatchDue(pod, state) {
		t.Error("not due once redis runs its new image and is ready")
	}
	pod.Annotations[appsv1beta1.InPlaceUpdateGraceKey] = "{}"
	if NextBatchDue(pod, state) {
		t.Error("due during a grace period")
	}
	delete(pod.Annotations, appsv1beta1.InPlaceUpdateGraceKey)
	// A container of the batch missing from pod status is not ready.
	pod.Status.ContainerStatuses = pod.Status.ContainerStatuses[:1]
	state.LastContainerStatuses = nil
	if NextBatchDue(pod, state) {
		t.Error("due with redis missing from the status")
	}

	next, err := ApplyNextBatch(priorityPod(), stateOf(t, pod), batchT0)
	if err != nil {
		t.Fatal(err)
	}
	last := stateOf(t, next)
	if last.NextBatchPending() || NextBatchDue(next, last) || last.PreCheckBeforeNext != nil {
		t.Errorf("after the last batch: %+v", last)
	}
}

func TestFirstBatch(t *testing.T) {
	withPriority := func(name string, priority int) corev1.Container {
		return corev1.Container{Name: name, Env: []corev1.EnvVar{BarrierEnv("p", priority)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		withPriority("low", -5), withPriority("mid", 1), withPriority("high1", 7), withPriority("high2", 7), {Name: "none"}, withPriority("untouched", 9),
	}}}
	all := map[string]string{"low": "x", "mid": "x", "high1": "x", "high2": "x", "none": "x"}
	tests := []struct {
		name   string
		images map[string]string
		refs   map[string]RefMetadata
		want   []string
	}{
		{name: "highest priority together, with the containers without one", images: all, want: []string{"high1", "high2", "none"}},
		{name: "only changed containers count", images: map[string]string{"low": "x", "mid": "x"}, want: []string{"mid"}},
		{name: "no priorities", images: map[string]string{"none": "x"}, want: []string{"none"}},
		{name: "nothing changes", want: []string{}},
		{
			name:   "a shared env label drags a lower priority along, transitively",
			images: map[string]string{"high1": "x"},
			refs: map[string]RefMetadata{
				"high1": {Labels: map[string]string{"l": "1"}},
				"mid":   {Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "1"}},
				"low":   {Annotations: map[string]string{"a": "2"}},
			},
			want: []string{"high1", "low", "mid"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sortedList(firstBatch(pod, tc.images, tc.refs, nil)); !slices.Equal(got, tc.want) {
				t.Errorf("first batch %v, want %v", got, tc.want)
			}
		})
	}
}

func sortedList[T interface{ UnsortedList() []string }](s T) []string {
	out := s.UnsortedList()
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// A pod without launch priorities is updated in one batch, recorded as OpenKruise records
// it, with nothing pending.
func TestSingleBatchWithoutPriorities(t *testing.T) {
	pod := priorityPod()
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = nil
	}
	if !ApplyInPlaceUpdate(pod, &InPlaceUpdate{Images: map[string]string{"nginx": "nginx:2", "redis": "redis:2"}}, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	got := pod.Annotations[appsv1beta1.InPlaceUpdateStateKey]
	if !strings.HasSuffix(got, `"updateImages":true,"containerBatchesRecord":[{"timestamp":"2026-03-01T12:00:00Z","containers":["nginx","redis"]}]}`) {
		t.Errorf("state %s, want one batch of both and nothing pending", got)
	}
	// An update that changes no container is recorded as an empty batch.
	pod = priorityPod()
	if !ApplyInPlaceUpdate(pod, &InPlaceUpdate{}, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	if got := pod.Annotations[appsv1beta1.InPlaceUpdateStateKey]; !strings.HasSuffix(got, `"lastContainerStatuses":null,"containerBatchesRecord":[{"timestamp":"2026-03-01T12:00:00Z","containers":[]}]}`) {
		t.Errorf("state %s, want an empty batch", got)
	}
}

// A new update of a pod whose last update still had batches to make carries them on:
// otherwise nginx would stay at its old image while the pod says it is at r3.
func TestNewUpdateCarriesPendingBatches(t *testing.T) {
	pod := priorityPod()
	update := &InPlaceUpdate{
		Images:               map[string]string{"nginx": "nginx:2", "redis": "redis:2"},
		ContainerRefMetadata: map[string]RefMetadata{"nginx": {Labels: map[string]string{"v": "2", "w": "2"}}},
	}
	if !ApplyInPlaceUpdate(pod, update, "cs-r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	// r3 fixes redis only, and changes one of nginx's labels again.
	fix := &InPlaceUpdate{
		Images:               map[string]string{"redis": "redis:3"},
		ContainerRefMetadata: map[string]RefMetadata{"nginx": {Labels: map[string]string{"w": "3"}}},
	}
	// Under CloneSetShortHash the revision label is the hash alone.
	pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = "r2"
	if !ApplyInPlaceUpdate(pod, fix, "cs-r3", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	state := stateOf(t, pod)
	if state.NextContainerImages["nginx"] != "nginx:2" || images(pod)[1] != "redis:3" {
		t.Errorf("after r3: pending images %v, images %v; want nginx:2 still pending, redis:3", state.NextContainerImages, images(pod))
	}
	if ref := state.NextContainerRefMetadata["nginx"]; ref.Labels["v"] != "2" || ref.Labels["w"] != "3" || !state.UpdateEnvFromMetadata {
		t.Errorf("pending labels of nginx %v (env update %v), want v=2 kept and w=3", ref.Labels, state.UpdateEnvFromMetadata)
	}

	// A pod moved to another revision since (its label no longer the state's) carries
	// nothing on.
	pod = priorityPod()
	if !ApplyInPlaceUpdate(pod, update, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = "r9"
	if !ApplyInPlaceUpdate(pod, fix, "r3", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	if pending := stateOf(t, pod).NextContainerImages; len(pending) != 0 {
		t.Errorf("pending images %v carried from another revision", pending)
	}
}

// An update that waits out a grace period is made in batches once it is over, and carries
// on what the pod's previous update had pending.
func TestGracePeriodUpdateIsBatched(t *testing.T) {
	pod := priorityPod()
	if !ApplyInPlaceUpdate(pod, &InPlaceUpdate{Images: map[string]string{"nginx": "nginx:2", "redis": "redis:2"}}, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	spec, err := (&InPlaceUpdate{Images: map[string]string{"redis": "redis:3"}}).GraceSpec("r3", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := DeferInPlaceUpdate(pod, spec, batchT0); err != nil {
		t.Fatal(err)
	}
	read, err := ReadInPlaceUpdateGrace(pod)
	if err != nil || read.ContainerImages["nginx"] != "nginx:2" || read.ContainerImages["redis"] != "redis:3" {
		t.Fatalf("deferred spec %+v, %v; want nginx's pending image carried", read, err)
	}
	if len(spec.ContainerImages) != 1 {
		t.Errorf("DeferInPlaceUpdate changed the spec it was given: %v", spec.ContainerImages)
	}
	finished, err := FinishInPlaceUpdate(pod, read, stateOf(t, pod), metav1.NewTime(batchT0.Add(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	state := stateOf(t, finished)
	if got := images(finished); !slices.Equal(got, []string{"nginx:1", "redis:3", "plain:1"}) || state.NextContainerImages["nginx"] != "nginx:2" {
		t.Errorf("after the grace period: images %v, pending %v; want redis first, nginx pending", got, state.NextContainerImages)
	}
	if len(state.ContainerBatchesRecord) != 1 || !state.ContainerBatchesRecord[0].Timestamp.Time.Equal(batchT0.Add(10*time.Second)) {
		t.Errorf("batches %+v, want one, made when the grace period ended", state.ContainerBatchesRecord)
	}
}

// batchWriter is a PodUpdater whose first writes meet conflicts; the live pod is what GetPod
// returns.
type batchWriter struct {
	conflicts int
	live      *corev1.Pod
	writes    []*corev1.Pod
}

func (w *batchWriter) UpdatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if w.conflicts > 0 {
		w.conflicts--
		return &corev1.Pod{}, apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New("stale"))
	}
	w.writes = append(w.writes, pod)
	return pod, nil
}

func (w *batchWriter) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	return w.live, nil
}

// UpdateNextBatch tries a conflicting write again on the live pod, and writes nothing, and
// reports nothing written, when the live pod already has the batch.
func TestUpdateNextBatchOnConflict(t *testing.T) {
	pod := priorityPod()
	if !ApplyInPlaceUpdate(pod, &InPlaceUpdate{Images: map[string]string{"nginx": "nginx:2", "redis": "redis:2"}}, "r2", batchT0) {
		t.Fatal("ApplyInPlaceUpdate failed")
	}
	made := len(stateOf(t, pod).ContainerBatchesRecord)
	now := metav1.NewTime(batchT0.Add(time.Minute))

	w := &batchWriter{conflicts: 1, live: pod}
	written, err := UpdateNextBatch(context.Background(), w, pod, made, now)
	if err != nil || written == nil || len(w.writes) != 1 || images(written)[0] != "nginx:2" {
		t.Fatalf("after a conflict: written %v, err %v, %d writes; want the next batch written once", written != nil, err, len(w.writes))
	}

	// Meanwhile someone else made the batch: the retry finds it made and writes nothing.
	w = &batchWriter{conflicts: 1, live: written}
	written, err = UpdateNextBatch(context.Background(), w, pod, made, now)
	if err != nil || written != nil || len(w.writes) != 0 {
		t.Errorf("batch already made live: written %v, err %v, %d writes; want nothing", written, err, len(w.writes))
	}
}
