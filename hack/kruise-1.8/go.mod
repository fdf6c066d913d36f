// Module kruise-1.8 builds kruise-manager and kruise-daemon of OpenKruise v1.8.2 from the Go
// module proxy: the last OpenKruise whose CRDs store every kind as v1alpha1, the release that
// the second takeover case of `make test-takeover` starts from. A module of its own for the
// same reason as hack/kruise: OpenKruise pins Kubernetes libraries (1.30 here), and replaces
// of a dependency are not inherited, so its replace directives are restated below.
module github.com/bosun-dev/bosun/hack/kruise-1.8

go 1.26.0

require github.com/openkruise/kruise v1.8.2

require k8s.io/kubernetes v1.30.10 // indirect

replace (
	golang.org/x/sys => golang.org/x/sys v0.19.0
	k8s.io/api => k8s.io/api v0.30.10
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.30.10
	k8s.io/apimachinery => k8s.io/apimachinery v0.30.10
	k8s.io/apiserver => k8s.io/apiserver v0.30.10
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.30.10
	k8s.io/client-go => k8s.io/client-go v0.30.10
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.30.10
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.30.10
	k8s.io/code-generator => k8s.io/code-generator v0.30.10
	k8s.io/component-base => k8s.io/component-base v0.30.10
	k8s.io/component-helpers => k8s.io/component-helpers v0.30.10
	k8s.io/controller-manager => k8s.io/controller-manager v0.30.10
	k8s.io/cri-api => k8s.io/cri-api v0.30.10
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.30.10
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.30.10
	k8s.io/endpointslice => k8s.io/endpointslice v0.30.10
	k8s.io/kms => k8s.io/kms v0.30.10
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.30.10
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.30.10
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.30.9
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.30.10
	k8s.io/kubectl => k8s.io/kubectl v0.30.10
	k8s.io/kubelet => k8s.io/kubelet v0.30.10
	k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.30.10
	k8s.io/metrics => k8s.io/metrics v0.30.10
	k8s.io/mount-utils => k8s.io/mount-utils v0.30.10
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.30.10
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.30.10
)
