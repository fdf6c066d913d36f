package jobutil

import (
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func job(mutate func(*appsv1beta1.ImagePullJob)) *appsv1beta1.ImagePullJob {
	j := &appsv1beta1.ImagePullJob{}
	appsv1beta1.SetDefaults_ImagePullJob(j)
	if mutate != nil {
		mutate(j)
	}
	return j
}

func lowest(int64) int64                   { return 0 }
func highest(n int64) int64                { return n - 1 }
func neverJob(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never }

func TestTagPullPolicyNever(t *testing.T) {
	for _, tc := range []struct {
		rand    func(int64) int64
		wantTTL int32
	}{{lowest, 86400 - 600}, {highest, 86400 + 600}} {
		p := TagPullPolicy(job(neverJob), tc.rand)
		if *p.TTLSecondsAfterFinished != tc.wantTTL {
			t.Errorf("ttl = %d, want %d", *p.TTLSecondsAfterFinished, tc.wantTTL)
		}
		if *p.ActiveDeadlineSeconds != 2400+1+2+4 || *p.TimeoutSeconds != 600 || *p.BackoffLimit != 3 {
			t.Errorf("policy = %+v, want deadline 2407 (4 × 600 + sleeps 1+2+4), timeout 600, backoff 3", p)
		}
	}
	short := TagPullPolicy(job(func(j *appsv1beta1.ImagePullJob) {
		neverJob(j)
		j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](10)
	}), lowest)
	if *short.ActiveDeadlineSeconds != MinNeverTagDeadlineSeconds {
		t.Errorf("deadline of a short pull = %d, want the floor %d", *short.ActiveDeadlineSeconds, MinNeverTagDeadlineSeconds)
	}
}

func TestNeverTagDeadlineSleepsAreCapped(t *testing.T) {
	// Sleeps 1, 2, 4, 8, 16, 30, 30 between eight attempts of 1000 s.
	if got := NeverTagDeadlineSeconds(1000, 7); got != 8000+1+2+4+8+16+30+30 {
		t.Errorf("NeverTagDeadlineSeconds(1000, 7) = %d", got)
	}
}

func TestTagPullPolicyAlways(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mutate       func(*appsv1beta1.ImagePullJob)
		rand         func(int64) int64
		wantTTL      int32
		wantDeadline *int64
	}{
		{"ttl", func(j *appsv1beta1.ImagePullJob) {
			j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](100)
		}, lowest, 400, nil},
		{"deadline", func(j *appsv1beta1.ImagePullJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](1000)
		}, highest, 1000 + 300 + 299, ptr.To[int64](1000)},
		{"neither", nil, lowest, 600*3 + 300, nil},
	} {
		p := TagPullPolicy(job(tc.mutate), tc.rand)
		if *p.TTLSecondsAfterFinished != tc.wantTTL || !ptr.Equal(p.ActiveDeadlineSeconds, tc.wantDeadline) {
			t.Errorf("%s: ttl %d deadline %v, want %d and %v", tc.name, *p.TTLSecondsAfterFinished, p.ActiveDeadlineSeconds, tc.wantTTL, tc.wantDeadline)
		}
	}
}

func TestParallelism(t *testing.T) {
	for _, tc := range []struct {
		in      *intstr.IntOrString
		want    int
		wantErr bool
	}{
		{nil, 1, false},
		{ptr.To(intstr.FromInt32(4)), 4, false},
		{ptr.To(intstr.FromString("3")), 3, false},
		{ptr.To(intstr.FromString("50%")), 0, true},
	} {
		got, err := Parallelism(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("Parallelism(%v) = %d, %v", tc.in, got, err)
		}
	}
}

func TestProgressMessage(t *testing.T) {
	for _, tc := range []struct {
		desired, succeeded, failed int32
		want                       string
	}{
		{0, 0, 0, "job is running, no progress"},
		{3, 1, 0, "job is running, progress 33.3%"},
		{3, 1, 1, "job is running, progress 66.7%"},
		{4, 4, 0, "job is running, progress 100.0%"},
	} {
		if got := ProgressMessage(tc.desired, tc.succeeded, tc.failed); got != tc.want {
			t.Errorf("ProgressMessage(%d, %d, %d) = %q, want %q", tc.desired, tc.succeeded, tc.failed, got, tc.want)
		}
	}
}

// Jobs name themselves in apps.kruise.io/v1beta1 on the tags they own, as OpenKruise 1.9
// does.
func TestOwnerReference(t *testing.T) {
	j := job(func(j *appsv1beta1.ImagePullJob) { j.Namespace, j.Name, j.UID = "ns", "pull", "uid-pull" })
	want := corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: "ns", Name: "pull", UID: "uid-pull"}
	if got := OwnerReference(j); got != want {
		t.Errorf("OwnerReference = %+v, want %+v", got, want)
	}
}
