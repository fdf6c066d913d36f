// Package framework runs the real Kubernetes servers that bosun's integration tests talk
// to: an etcd and a kube-apiserver started as child processes on free loopback ports, with
// generated certificates, a static admin token and RBAC, exactly as a small real cluster
// would serve them. It also has the helpers those tests share: a fresh namespace per test,
// CRD installation, running and building bosun's own binaries, and polling.
//
// The servers are prebuilt binaries (see ToolsBinDir); the framework never compiles them
// itself because the first build takes minutes. Tests are skipped with a hint when the
// binaries are missing, unless BOSUN_INTEGRATION=1 demands that they run.
//
// Every child process runs in its own process group and is killed as a group when it is
// stopped. On Linux the kernel also kills it when the test binary dies (panic, timeout,
// SIGKILL), so no test leaves an etcd or kube-apiserver behind.
//
// A test package usually shares one control plane between its tests, because starting one
// takes about ten seconds:
//
//	func TestMain(m *testing.M) {
//		framework.Main(m, framework.Options{})
//	}
//
//	func TestSomething(t *testing.T) {
//		cp := framework.SharedControlPlane(t)
//		client := cp.Clientset(t)
//		ns := framework.CreateTestNamespace(t, client)
//		...
//	}
package framework
