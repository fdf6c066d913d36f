// Package cluster runs bosun's local cluster on this machine: a control plane (etcd,
// kube-apiserver, kube-scheduler, upstream kube-controller-manager for the controllers bosun
// does not replace, bosun-controller-manager) and one real node (containerd with runc and
// the CNI bridge, the kubelet, bosun-daemon), with a loopback image registry holding images
// built here from test/images. Nothing is pulled from the internet. Like kind, it has a
// default StorageClass ("standard"), served by a hostPath provisioner (package
// hostpathprovisioner) that runs inside the process that started the cluster.
//
// Every file, socket and mount lives under one directory (Options.Dir): containerd's root
// and state, the kubelet's root, the CNI configuration and IP allocations, the registry's
// storage, the volumes' directories and every log. Stop, and Start before it runs, remove what a run leaves outside
// that directory: processes, mounts, the bridge device, the kubelet's log links.
//
// `make local-up` (hack/local-up) and the end-to-end suite (test/e2e) both use it; the
// takeover test (test/takeover) starts it without bosun (Options.WithoutBosun), runs
// OpenKruise on it and then starts bosun (Cluster.StartBosun). It needs root and the Debian
// packages that hack/install-deps.sh installs.
package cluster
