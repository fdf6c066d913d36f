package app

import "github.com/bosun-dev/bosun/pkg/controllermanager/registry"

// NewControllerRegistry returns a registry holding every built-in controller.
func NewControllerRegistry() *registry.Registry {
	r := registry.New()
	for _, d := range builtinControllers() {
		r.MustRegister(d)
	}
	return r
}

// builtinControllers lists the controllers bosun-controller-manager runs. Adding a controller
// is one entry, for example
//
//	{Name: "replicaset-controller", Aliases: []string{"replicaset"}, Constructor: newReplicaSetController},
func builtinControllers() []registry.Descriptor {
	return []registry.Descriptor{
		{Name: "replicaset-controller", Aliases: []string{"replicaset"}, ClientName: "replicaset-controller", Constructor: newReplicaSetController},
		{Name: "deployment-controller", Aliases: []string{"deployment"}, ClientName: "deployment-controller", Constructor: newDeploymentController},
	}
}
