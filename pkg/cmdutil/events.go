package cmdutil

import (
	"context"

	bosunscheme "github.com/bosun-dev/client-go/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventBroadcaster sends a binary's events to the API server. Both binaries use one per
// process and hand each controller a recorder with its own source component.
type EventBroadcaster struct {
	record.EventBroadcaster
	scheme *runtime.Scheme
}

// NewEventBroadcaster starts a broadcaster writing through client. Events must keep
// flowing while controllers stop, so it only borrows ctx's logger; call Shutdown at the very
// end.
func NewEventBroadcaster(ctx context.Context, client kubernetes.Interface) *EventBroadcaster {
	b := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	b.StartStructuredLogging(3)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	// Events may name built-in objects or bosun's own.
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(bosunscheme.AddToScheme(scheme))
	return &EventBroadcaster{EventBroadcaster: b, scheme: scheme}
}

// RecorderFor returns a recorder whose events name component as their source.
func (b *EventBroadcaster) RecorderFor(component string) record.EventRecorderLogger {
	return b.NewRecorder(b.scheme, corev1.EventSource{Component: component})
}
