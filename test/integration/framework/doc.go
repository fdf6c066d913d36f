// Package framework runs the real Kubernetes servers that bosun's integration tests talk
// to: an etcd and a kube-apiserver started as child processes on free loopback ports, with
// generated certificates, a static admin token and RBAC, exactly as a small real cluster
// would serve them. It also has the helpers those tests share: CRD installation, running and
// building bosun's own binaries, and the environment of one test (Env): a context bound to
// the test, admin clients, a fresh namespace, typed reads, writes and waits (Objects), and
// a cleanup that removes what the test made once what it started has stopped.
//
// The servers are prebuilt binaries (see ToolsBinDir); the framework never compiles them
// itself because the first build takes minutes. Tests are skipped with a hint when the
// binaries are missing, unless BOSUN_INTEGRATION=1 demands that they run.
//
// Every child process runs in its own process group and is killed as a group when it is
// stopped. On Linux the kernel also kills it when the test binary dies (panic, timeout,
// SIGKILL), so no test leaves an etcd or kube-apiserver behind.
//
// The bosun-controller-manager a test starts (StartBosunControllerManager) runs with
// client-go's cache mutation detector (DetectCacheMutation): it panics when the manager's
// code writes to an object of its informers' caches, whose pods share maps and strings.
//
// A test package usually shares one control plane between its tests, because starting one
// takes about ten seconds:
//
//	func TestMain(m *testing.M) {
//		framework.Main(m, framework.Options{})
//	}
//
//	func TestSomething(t *testing.T) {
//		e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{Remove: []string{"pods"}})
//		pod := e.Pods().Create(t, newPod("web"))
//		e.Pods().WaitFor(t, pod.Name, "phase Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
//		...
//	}
package framework
