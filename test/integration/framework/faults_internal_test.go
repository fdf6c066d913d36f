package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditedPodWrite is one pod create or delete as kube-apiserver audits it: name is the
// pod's (for a create of a generated name, the created object's), code the answer (0: the
// server died before it answered, after it logged the request).
type auditedPodWrite struct {
	verb, name          string
	code                int32
	received, completed time.Time
}

func (w auditedPodWrite) event(t *testing.T, namespace string) auditv1.Event {
	t.Helper()
	ev := auditv1.Event{
		Stage: auditv1.StageResponseComplete, Verb: w.verb,
		ObjectRef:                &auditv1.ObjectReference{Resource: "pods", Namespace: namespace},
		RequestReceivedTimestamp: metav1.NewMicroTime(w.received),
		StageTimestamp:           metav1.NewMicroTime(w.completed),
	}
	if w.code != 0 {
		ev.ResponseStatus = &metav1.Status{Code: w.code}
	}
	switch {
	case w.verb == "create" && w.code == 201:
		created, err := json.Marshal(metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: namespace}})
		if err != nil {
			t.Fatal(err)
		}
		ev.ResponseObject = &runtime.Unknown{Raw: created}
	case w.verb != "create":
		ev.ObjectRef.Name = w.name
	}
	return ev
}

// A create the audit log shows accepted right at a kube-apiserver SIGKILL may never have
// been answered (the server logs before it answers): CheckPodWrites counts it unanswered,
// as it does a pod created at the kill with no audited create; creates accepted well away
// from a kill, and deletes, are answered.
func TestCheckPodWritesCountsCreatesAcceptedAtAKillAsUnanswered(t *testing.T) {
	const namespace = "faults"
	killed := time.Now().Add(-time.Minute)
	back := killed.Add(5 * time.Second)
	at := func(d time.Duration) time.Time { return killed.Add(d) }
	writes := []auditedPodWrite{
		// Answered: a second before the kill.
		{"create", "before", 201, at(-time.Second - 10*time.Millisecond), at(-time.Second)},
		// Carried out and logged 10 ms before the SIGKILL: its answer may be lost.
		{"create", "at-kill", 201, at(-30 * time.Millisecond), at(-10 * time.Millisecond)},
		// The controller, taking that create as failed, creates another pod after the
		// restart, sees two on the node and deletes one.
		{"create", "retried", 201, at(6 * time.Second), at(6*time.Second + 10*time.Millisecond)},
		{"delete", "retried", 200, at(7 * time.Second), at(7*time.Second + 10*time.Millisecond)},
		// Long after: answered.
		{"create", "after", 201, at(30 * time.Second), at(30*time.Second + 10*time.Millisecond)},
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	var log []byte
	for _, w := range writes {
		line, err := json.Marshal(w.event(t, namespace))
		if err != nil {
			t.Fatal(err)
		}
		log = append(append(log, line...), '\n')
	}
	if err := os.WriteFile(path, log, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &FaultInjector{
		e:      &Env{Namespace: namespace, Audit: &AuditTail{path: path}},
		faults: []Fault{{Phase: "p", Target: FaultAPIServer, At: killed, Back: back}},
	}
	pod := func(name string, created time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: metav1.NewTime(created)}}
	}
	existing := []corev1.Pod{
		pod("before", at(-time.Second)), pod("at-kill", at(-10*time.Millisecond)), pod("after", at(30*time.Second)),
		// Created at the kill, its audit event lost with the server.
		pod("unaudited", killed),
	}

	got := f.CheckPodWrites(t, killed.Add(-time.Hour), sets.New[string](), existing, func(*corev1.Pod) bool { return true })

	if want := sets.New("before", "at-kill", "retried", "after", "unaudited"); !got.Created.Equal(want) {
		t.Errorf("created %v, want %v", sets.List(got.Created), sets.List(want))
	}
	if got.Accepted != 4 {
		t.Errorf("%d creates accepted, want 4", got.Accepted)
	}
	if want := []string{"at-kill"}; !slices.Equal(got.AcceptedAtKill, want) {
		t.Errorf("accepted at the kill: %v, want %v", got.AcceptedAtKill, want)
	}
	if want := []string{"unaudited"}; !slices.Equal(got.Unaudited, want) {
		t.Errorf("unaudited: %v, want %v", got.Unaudited, want)
	}
	if got.UnansweredCreates != 2 || got.Unanswered != 2 {
		t.Errorf("%d unanswered writes, %d of them creates; want 2 creates: the one accepted at the kill and the unaudited one", got.Unanswered, got.UnansweredCreates)
	}
	if want := "5 pods created (4 creates accepted, 1 of them at a kube-apiserver SIGKILL, 1 not audited by name), 1 deleted; 0 requests cut off by faults: []"; fmt.Sprint(got) != want {
		t.Errorf("String() = %q, want %q", fmt.Sprint(got), want)
	}
}
