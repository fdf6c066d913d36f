package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

func TestPercentile(t *testing.T) {
	// 1..100 ms: the nearest-rank p-th percentile is p ms.
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{7}, 99, 7},
		{"median of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"max", hundred, 100, 100 * time.Millisecond},
		{"tiny p is the minimum", hundred, 0.001, time.Millisecond},
		// Nearest rank never interpolates: p50 of four values is the second.
		{"even count", []time.Duration{10, 20, 30, 40}, 50, 20},
		{"p99 of ten is the largest", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestAdmissionReviewBodyAndUIDs(t *testing.T) {
	object, err := json.Marshal(userDaemonSet())
	if err != nil {
		t.Fatal(err)
	}
	body, err := admissionReviewBody(object)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, at := range [][2]int{{0, 0}, {0, 1}, {49, 19999}, {1, 0}} {
		withID, uid := withUID(body, at[0], at[1])
		if len(uid) != len(placeholderUID) || seen[uid] {
			t.Fatalf("withUID(%v) = %q: not a fresh UID of the placeholder's length", at, uid)
		}
		seen[uid] = true
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(withID, &review); err != nil {
			t.Fatalf("the body with UID %s does not decode: %v", uid, err)
		}
		req := review.Request
		if string(req.UID) != uid || req.Operation != admissionv1.Create || req.Name != "node-agent" || req.Namespace != benchNamespace ||
			req.Kind.Group != appsv1alpha1.GroupName || req.Resource.Resource != "daemonsets" {
			t.Errorf("unexpected request: %+v", req)
		}
	}
	// withUID copies: the prepared body keeps its placeholder for the next request.
	if strings.Count(string(body), placeholderUID) != 1 {
		t.Error("the prepared body lost its placeholder")
	}
}

func TestUserDaemonSetNeedsDefaults(t *testing.T) {
	// The mutating webhook's load must exercise its patch path.
	ds := userDaemonSet()
	defaulted := ds.DeepCopy()
	appsv1alpha1.SetObjectDefaults_DaemonSet(defaulted)
	if equality.Semantic.DeepEqual(ds, defaulted) {
		t.Error("the realistic DaemonSet already has every default; the mutating webhook would not patch it")
	}
}

func TestWebhookMedian(t *testing.T) {
	runs := []webhookResult{
		{Requests: 4, Latencies: []time.Duration{1, 2, 3, 4}, Wall: time.Second, Rejected: 1},
		{Requests: 4, Latencies: []time.Duration{5, 6, 7, 8}, Wall: 2 * time.Second, Errored: 2},
		{Requests: 4, Latencies: []time.Duration{2, 3, 4, 5}, Wall: time.Second},
	}
	f := webhookMedian(runs)
	if f.p50 != 3 || f.max != 5 || f.rps != 4 || f.rejected != 1 || f.errored != 2 || f.requests != 12 {
		t.Errorf("webhookMedian = %+v", f)
	}
}
