package controller

import (
	"context"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// Context is what the node agent hands each of its controllers. Every informer factory is
// scoped to the agent's node: a controller asks it for the informers it needs in its
// constructor, and the agent starts them all before calling Run.
type Context struct {
	// NodeName is the node this agent runs on.
	NodeName string

	// KubeClient and BosunClient carry the controller's own User-Agent.
	KubeClient  kubernetes.Interface
	BosunClient bosunclientset.Interface

	// Node watches this node only; Pods the pods bound to it.
	Node informers.SharedInformerFactory
	Pods informers.SharedInformerFactory
	// NodeImage watches this node's NodeImage only; ContainerRecreateRequests the active
	// requests of this node, in every namespace.
	NodeImage                 bosuninformers.SharedInformerFactory
	ContainerRecreateRequests bosuninformers.SharedInformerFactory

	// Runtime is the container runtime: Runtime() returns the current connection, nil
	// while the runtime does not answer.
	Runtime RuntimeSource
	// RuntimeState follows whether the runtime answers, for the controllers that report it.
	RuntimeState RuntimeState

	// Recorder records events as the controller's component.
	Recorder record.EventRecorderLogger

	// SecretsNamespace is the only namespace pull secrets are read from
	// (--image-pull-secrets-namespace).
	SecretsNamespace string
	// MaxParallelImagePulls bounds the pulls running at once on this node; 0 is unlimited
	// (--max-parallel-image-pulls).
	MaxParallelImagePulls int

	FeatureGate featuregate.FeatureGate
}

// RuntimeSource hands out the current connection to the container runtime. The node agent
// reconnects when the runtime restarts, so controllers ask for it on every use instead of
// keeping one.
type RuntimeSource interface {
	Runtime() *cri.Runtime
}

// RuntimeState is the runtime connection's state as the agent's monitor knows it.
type RuntimeState interface {
	// Changed receives a token when the runtime turns available or unavailable.
	Changed() <-chan struct{}
	// State returns whether the runtime answers, and why not.
	State() (available bool, lastErr error)
	// Describe names the runtime that answers.
	Describe() string
}

// Controller is a node-side controller: Run blocks until ctx ends.
type Controller interface {
	Run(ctx context.Context)
}
