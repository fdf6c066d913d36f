// Package jobutil holds the arithmetic of ImagePullJobs that needs no client, cache or
// clock: the parallelism, the pull policy a job gives the NodeImage tags it owns, the owner
// reference it puts on them, and its status message.
package jobutil

import (
	"fmt"
	"strconv"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	// NeverTagTTLSeconds is how long a tag of a job that never completes stays on a node
	// after its pull finished; the job then pulls again, keeping the image fresh. Each tag
	// gets up to NeverTagTTLJitterSeconds more or less, so that a job's tags do not all
	// expire, and re-pull, at once.
	NeverTagTTLSeconds       = 24 * 60 * 60
	NeverTagTTLJitterSeconds = 10 * 60
	// MinNeverTagDeadlineSeconds is the least time a node gets for the pull of a job that
	// never completes.
	MinNeverTagDeadlineSeconds = 1800
	// AlwaysTagTTLBonusSeconds is added to the time to live of the tags of a job that
	// completes, so that a tag outlives the job's own status counting of it; up to
	// AlwaysTagTTLJitterSeconds more spreads the removals.
	AlwaysTagTTLBonusSeconds  = 300
	AlwaysTagTTLJitterSeconds = 300

	// The node agent sleeps between pull attempts, from firstRetrySleepSeconds doubling up
	// to maxRetrySleepSeconds.
	firstRetrySleepSeconds = 1
	maxRetrySleepSeconds   = 30
)

// Messages of the job status, OpenKruise's.
const (
	MessageCompleted        = "job has completed"
	MessageDeadlineExceeded = "job exceeds activeDeadlineSeconds"
	MessageNoProgress       = "job is running, no progress"
)

// Parallelism returns the number of nodes p lets pull at once: the integer, or the integer
// a string holds; appsv1beta1.DefaultImagePullJobParallelism when p is nil.
func Parallelism(p *intstr.IntOrString) (int, error) {
	if p == nil {
		return appsv1beta1.DefaultImagePullJobParallelism, nil
	}
	if p.Type == intstr.Int {
		return int(p.IntVal), nil
	}
	n, err := strconv.Atoi(p.StrVal)
	if err != nil {
		return 0, fmt.Errorf("must be an integer or a string holding one")
	}
	return n, nil
}

// TimeoutSeconds and BackoffLimit are the job's per-attempt timeout and retries, defaulted.
func TimeoutSeconds(job *appsv1beta1.ImagePullJob) int32 {
	if pp := job.Spec.PullPolicy; pp != nil && pp.TimeoutSeconds != nil {
		return *pp.TimeoutSeconds
	}
	return appsv1beta1.DefaultImagePullTimeoutSeconds
}

// BackoffLimit is the job's number of retries after the first attempt, defaulted.
func BackoffLimit(job *appsv1beta1.ImagePullJob) int32 {
	if pp := job.Spec.PullPolicy; pp != nil && pp.BackoffLimit != nil && *pp.BackoffLimit >= 0 {
		return *pp.BackoffLimit
	}
	return appsv1beta1.DefaultImagePullBackoffLimit
}

// IsNever reports whether the job never completes.
func IsNever(job *appsv1beta1.ImagePullJob) bool {
	return job.Spec.CompletionPolicy.Type == appsv1beta1.Never
}

// NeverTagDeadlineSeconds is the pull deadline of a tag of a job that never completes:
// every attempt its whole timeout plus the agent's sleeps between attempts, and at least
// MinNeverTagDeadlineSeconds. OpenKruise gives such tags max(1800, timeoutSeconds), which
// cuts the retries of slow pulls short.
func NeverTagDeadlineSeconds(timeoutSeconds, backoffLimit int32) int64 {
	total := int64(timeoutSeconds) * (int64(backoffLimit) + 1)
	sleep := int64(firstRetrySleepSeconds)
	for range backoffLimit {
		total += sleep
		sleep = min(2*sleep, maxRetrySleepSeconds)
	}
	return max(total, MinNeverTagDeadlineSeconds)
}

// TagPullPolicy is the pull policy the job gives a tag it adds. randInt63n(n) returns a
// random number in [0, n); it spreads the tags' times to live.
func TagPullPolicy(job *appsv1beta1.ImagePullJob, randInt63n func(n int64) int64) *appsv1beta1.ImageTagPullPolicy {
	timeout, backoff := TimeoutSeconds(job), BackoffLimit(job)
	policy := &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To(timeout), BackoffLimit: ptr.To(backoff)}
	if IsNever(job) {
		ttl := NeverTagTTLSeconds - NeverTagTTLJitterSeconds + randInt63n(2*NeverTagTTLJitterSeconds+1)
		policy.TTLSecondsAfterFinished = ptr.To(int32(ttl))
		policy.ActiveDeadlineSeconds = ptr.To(NeverTagDeadlineSeconds(timeout, backoff))
		return policy
	}
	cp := job.Spec.CompletionPolicy
	var ttl int64
	switch {
	case cp.TTLSecondsAfterFinished != nil:
		ttl = int64(*cp.TTLSecondsAfterFinished)
	case cp.ActiveDeadlineSeconds != nil:
		ttl = *cp.ActiveDeadlineSeconds
	default:
		ttl = int64(timeout) * int64(backoff)
	}
	ttl += AlwaysTagTTLBonusSeconds + randInt63n(AlwaysTagTTLJitterSeconds)
	policy.TTLSecondsAfterFinished = ptr.To(int32(min(ttl, int64(1<<31-1))))
	if cp.ActiveDeadlineSeconds != nil {
		policy.ActiveDeadlineSeconds = ptr.To(*cp.ActiveDeadlineSeconds)
	}
	return policy
}

// PolicyDiffers reports whether the pull-shaping part of a tag's policy (timeout, retries,
// deadline) differs from want; the time to live, randomised per tag, is not compared.
func PolicyDiffers(have, want *appsv1beta1.ImageTagPullPolicy) bool {
	if have == nil {
		return true
	}
	return !ptr.Equal(have.TimeoutSeconds, want.TimeoutSeconds) ||
		!ptr.Equal(have.BackoffLimit, want.BackoffLimit) ||
		!ptr.Equal(have.ActiveDeadlineSeconds, want.ActiveDeadlineSeconds)
}

// OwnerReference is the reference a job puts on the NodeImage tags it owns, naming it in
// apps.kruise.io/v1beta1 as OpenKruise 1.9 does. Readers match it by UID, group and kind
// in any version (nodeimageutil.RefersToImagePullJob).
func OwnerReference(job *appsv1beta1.ImagePullJob) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: appsv1beta1.SchemeGroupVersion.String(),
		Kind:       "ImagePullJob",
		Namespace:  job.Namespace,
		Name:       job.Name,
		UID:        job.UID,
	}
}

// ProgressMessage is the message of a running job: the share of its nodes that finished.
func ProgressMessage(desired, succeeded, failed int32) string {
	if desired == 0 {
		return MessageNoProgress
	}
	return fmt.Sprintf("job is running, progress %.1f%%", float64(succeeded+failed)*100/float64(desired))
}

// ImagePullPolicy is the job's image pull policy, defaulted.
func ImagePullPolicy(job *appsv1beta1.ImagePullJob) appsv1beta1.ImagePullPolicy {
	if job.Spec.ImagePullPolicy == "" {
		return appsv1beta1.PullIfNotPresent
	}
	return job.Spec.ImagePullPolicy
}
