// Module client-go is bosun's generated client library: typed clientset, listers,
// informers and apply configurations for the types in github.com/bosun-dev/api.
module github.com/bosun-dev/client-go

go 1.26

require (
	github.com/bosun-dev/api v0.0.0
	k8s.io/api v0.36.6
	k8s.io/apimachinery v0.36.6
	k8s.io/client-go v0.36.6
)

replace github.com/bosun-dev/api => ../api
