package framework

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodSampleInterval is how often a PodSampler lists the pods.
const PodSampleInterval = 100 * time.Millisecond

// PodSampler lists the pods of a namespace every PodSampleInterval, each time one
// consistent list, and hands every list to a function, which checks what must hold at
// every moment ("never more than maxUnavailable unavailable"). Lists that fail, as they do
// while kube-apiserver is down, are skipped.
type PodSampler struct {
	done, stopped chan struct{}

	mu      sync.Mutex
	samples int
}

// StartPodSampler samples the pods of namespace through client until Stop or the end of
// the test.
func StartPodSampler(t testing.TB, ctx context.Context, client kubernetes.Interface, namespace string, sample func(pods []corev1.Pod)) *PodSampler {
	s := &PodSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		ticker := time.NewTicker(PodSampleInterval)
		defer ticker.Stop()
		for {
			listCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			list, err := client.CoreV1().Pods(namespace).List(listCtx, metav1.ListOptions{})
			cancel()
			if err == nil {
				sample(list.Items)
				s.mu.Lock()
				s.samples++
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() { s.Stop() })
	return s
}

// Stop ends the sampling, once the sample under way is done, and returns how many lists
// were sampled; calling it again does nothing more.
func (s *PodSampler) Stop() int {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	<-s.stopped
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// Peak keeps the largest value it was given and a note on what went with it, safely
// across goroutines.
type Peak struct {
	mu    sync.Mutex
	set   bool
	value int
	note  string
}

// Record keeps v, and note() with it, when v is the largest so far (or the first).
func (p *Peak) Record(v int, note func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.set || v > p.value {
		p.set, p.value, p.note = true, v, note()
	}
}

// Get returns the largest value and its note.
func (p *Peak) Get() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.value, p.note
}
