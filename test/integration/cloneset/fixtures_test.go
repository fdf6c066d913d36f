package cloneset

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 3 * time.Minute
	waitTimeout = time.Minute

	image1 = "registry.example/web:1"
	image2 = "registry.example/web:2"
)

// testEnv is what every test works with: the framework's environment, whose CloneSets and
// pods, and bosun's webhook configurations (they fail closed, and nothing answers them once
// the test's manager stopped), are removed when the test ends.
type testEnv struct {
	*framework.Env
	// warnings are the admission warnings the API server returned to alpha and beta.
	warnings *warningRecorder
	alpha    *framework.Objects[*appsv1alpha1.CloneSet]
	beta     *framework.Objects[*appsv1beta1.CloneSet]
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true,
		Remove: []string{"clonesets.apps.kruise.io", "pods"},
	})
	warnings := &warningRecorder{}
	config := e.CP.Config()
	config.WarningHandler = warnings
	client := bosunclient.NewForConfigOrDie(config)
	return &testEnv{
		Env:      e,
		warnings: warnings,
		alpha:    framework.NewObjects(e, "CloneSet", e.Namespace, client.AppsV1alpha1().CloneSets(e.Namespace)),
		beta:     framework.NewObjects(e, "CloneSet", e.Namespace, client.AppsV1beta1().CloneSets(e.Namespace)),
	}
}

// startManager runs bosun-controller-manager with the cloneset controller, whose entry
// brings the CloneSet's admission webhooks (served while the API server serves v1beta1
// CloneSets through bosun's CRD), until the test ends, and returns once the API server calls
// both CloneSet webhooks. The manager runs as a standby: a Lease another replica holds keeps
// it from leading, so the controller never touches the tests' CloneSets and pods, while
// the webhooks answer, as they do on every replica.
func (e *testEnv) startManager(t *testing.T) {
	t.Helper()
	const lease = "cloneset-admission-standby"
	now := metav1.NewMicroTime(time.Now())
	_, err := e.Client.CoordinationV1().Leases(e.Namespace).Create(e.Ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Lease that keeps the manager a standby: %v", err)
	}
	probe := newAlpha("admission-probe")
	send := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().CloneSets(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: "cloneset", ExtraArgs: []string{
			"--leader-elect=true", "--leader-elect-resource-namespace=" + e.Namespace, "--leader-elect-resource-name=" + lease,
		}},
		framework.WebhookProbe{Webhook: "mcloneset.kb.io", Send: send},
		framework.WebhookProbe{Webhook: "vcloneset.kb.io", Send: send},
	)
}

// newAlpha is a v1alpha1 CloneSet as a user writes it: a selector app=<name> and a
// template of one container running image1; nothing else.
func newAlpha(name string) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
			},
		},
	}
}

// newBeta is newAlpha as a v1beta1 client writes it.
func newBeta(name string) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
			},
		},
	}
}

// warningRecorder keeps the warnings the API server returns with its answers.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *warningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings received since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}
