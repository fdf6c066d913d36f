package main

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

func TestAgentStatusReportsEveryTagOfTheSpec(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	spec := appsv1alpha1.NodeImageSpec{Images: map[string]appsv1alpha1.ImageSpec{
		"reg.io/app": {Tags: []appsv1alpha1.ImageTagSpec{{Tag: "2.0", Version: 1}, {Tag: "1.0"}}},
		"reg.io/db":  {Tags: []appsv1alpha1.ImageTagSpec{{Tag: "5"}}},
		"reg.io/new": {Tags: []appsv1alpha1.ImageTagSpec{{Tag: "x"}}},
	}}
	finished := appsv1alpha1.ImageTagStatus{Tag: "5", Phase: appsv1alpha1.ImagePhaseSucceeded, CompletionTime: &start, Progress: 100}
	old := appsv1alpha1.NodeImageStatus{
		Desired: 9,
		ImageStatuses: map[string]appsv1alpha1.ImageStatus{
			// Kept: current at its version, and the agent has nothing newer.
			"reg.io/db": {Tags: []appsv1alpha1.ImageTagStatus{finished}},
			// Dropped: 2.0 is at version 1 in spec, and the image "gone" left the spec.
			"reg.io/app":  {Tags: []appsv1alpha1.ImageTagStatus{{Tag: "2.0", Phase: appsv1alpha1.ImagePhaseFailed}}},
			"reg.io/gone": {Tags: []appsv1alpha1.ImageTagStatus{{Tag: "1", Phase: appsv1alpha1.ImagePhaseSucceeded}}},
		},
	}
	pulling := appsv1alpha1.ImageTagStatus{Tag: "2.0", Phase: appsv1alpha1.ImagePhasePulling, Version: 1, StartTime: &start}
	done := succeededStatus(appsv1alpha1.ImageTagStatus{Tag: "1.0", Phase: appsv1alpha1.ImagePhasePulling, StartTime: &start}, "reg.io/app", start.Time)
	reported := map[tagKey]appsv1alpha1.ImageTagStatus{
		{"reg.io/app", "2.0"}: pulling,
		{"reg.io/app", "1.0"}: done,
	}

	got := agentStatus(spec, old, reported)
	want := appsv1alpha1.NodeImageStatus{
		Desired: 4, Succeeded: 2, Pulling: 1,
		ImageStatuses: map[string]appsv1alpha1.ImageStatus{
			"reg.io/app": {Tags: []appsv1alpha1.ImageTagStatus{done, pulling}},
			"reg.io/db":  {Tags: []appsv1alpha1.ImageTagStatus{finished}},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("agentStatus() = %+v\nwant %+v", got, want)
	}
}

func TestSucceededStatusLooksLikeAPull(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	s := succeededStatus(appsv1alpha1.ImageTagStatus{Tag: "1.0", Phase: appsv1alpha1.ImagePhasePulling, Version: 3}, "reg.io/app", now)
	if s.Phase != appsv1alpha1.ImagePhaseSucceeded || s.Progress != 100 || s.Version != 3 || s.CompletionTime == nil || !s.CompletionTime.Time.Equal(now) {
		t.Errorf("succeededStatus() = %+v", s)
	}
	const prefix = "reg.io/app@sha256:"
	if len(s.ImageID) != len(prefix)+64 || s.ImageID[:len(prefix)] != prefix {
		t.Errorf("imageID = %q, want %s<64 hex digits>", s.ImageID, prefix)
	}
}

func TestCountWritesChargesEachClient(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	event := func(userAgent, verb, resource, subresource string, code int32, at time.Time) auditv1.Event {
		return auditv1.Event{
			Stage: auditv1.StageResponseComplete, Verb: verb, UserAgent: userAgent,
			ObjectRef:                &auditv1.ObjectReference{Resource: resource, Subresource: subresource},
			ResponseStatus:           &metav1.Status{Code: code},
			RequestReceivedTimestamp: metav1.NewMicroTime(at),
		}
	}
	manager := "bosun-controller-manager/v0.0.0 (linux/amd64) kubernetes/abc/imagepulljob-controller"
	later := since.Add(time.Second)
	events := []auditv1.Event{
		event(manager, "update", "nodeimages", "", 200, later),
		event(manager, "update", "nodeimages", "", 409, later),
		event(manager, "update", "imagepulljobs", "status", 200, later),
		event(manager, "get", "nodeimages", "", 200, later),                      // not a write
		event(manager, "update", "nodeimages", "", 200, since.Add(-time.Second)), // before the window
		event(agentUserAgent, "update", "nodeimages", "status", 200, later),
		event(agentUserAgent, "update", "nodeimages", "status", 422, later),
		event(benchUserAgent, "create", "imagepulljobs", "", 201, since),
		event("kube-apiserver/v1.34.0 (linux/amd64) kubernetes/abc", "update", "leases", "", 200, later),
	}
	got := countWrites(events, since)
	want := map[string]map[string]writeCount{
		actorManager: {"nodeimages": {Requests: 2, Conflicts: 1}, "imagepulljobs/status": {Requests: 1}},
		actorAgents:  {"nodeimages/status": {Requests: 2, Failed: 1}},
		actorBench:   {"imagepulljobs": {Requests: 1}},
		actorOther:   {"leases": {Requests: 1}},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("countWrites() = %v\nwant %v", got, want)
	}
}

func TestPullWaves(t *testing.T) {
	tests := []struct {
		nodes, parallelism, waves int
	}{
		{500, 50, 10},
		{501, 50, 11},
		{10, 50, 1},
	}
	for _, tt := range tests {
		waves, floor := pullWaves(tt.nodes, tt.parallelism, 200*time.Millisecond)
		if waves != tt.waves || floor != time.Duration(tt.waves)*200*time.Millisecond {
			t.Errorf("pullWaves(%d, %d) = %d, %v; want %d waves", tt.nodes, tt.parallelism, waves, floor, tt.waves)
		}
	}
}

func TestWriteLatenciesOfOneClientAndResource(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	write := func(userAgent, resource, subresource string, took time.Duration) auditv1.Event {
		return auditv1.Event{
			Stage: auditv1.StageResponseComplete, Verb: "update", UserAgent: userAgent,
			ObjectRef:                &auditv1.ObjectReference{Resource: resource, Subresource: subresource},
			RequestReceivedTimestamp: metav1.NewMicroTime(since),
			StageTimestamp:           metav1.NewMicroTime(since.Add(took)),
		}
	}
	manager := managerUserAgentPrefix + "v0.0.0 (linux/amd64) kubernetes/abc/imagepulljob-controller"
	events := []auditv1.Event{
		write(manager, "nodeimages", "", 30*time.Millisecond),
		write(manager, "nodeimages", "", 10*time.Millisecond),
		write(manager, "nodeimages", "status", time.Second),
		write(agentUserAgent, "nodeimages", "", time.Second),
		write(manager, "imagepulljobs", "", time.Second),
	}
	got := writeLatencies(events, since, actorManager, "nodeimages")
	want := []time.Duration{10 * time.Millisecond, 30 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Errorf("writeLatencies() = %v, want %v", got, want)
	}
}
