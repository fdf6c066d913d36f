package advanceddaemonset

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A DaemonSet created with nothing but a selector and a template reads back with
// OpenKruise's defaults, and its pod template and partition are left alone.
func TestDefaultingFillsOpenKruiseDefaults(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")

	ds := e.daemonSets().Create(t, newDS("defaults"))

	if got := ds.Spec.UpdateStrategy.Type; got != appsv1alpha1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("updateStrategy.type = %q, want RollingUpdate", got)
	}
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		t.Fatalf("updateStrategy.rollingUpdate is not set: %s", dsString(ds))
	}
	if ru.Type != appsv1alpha1.StandardRollingUpdateType {
		t.Errorf("rollingUpdate.rollingUpdateType = %q, want Standard", ru.Type)
	}
	if ru.MaxUnavailable == nil || *ru.MaxUnavailable != intstr.FromInt32(1) {
		t.Errorf("rollingUpdate.maxUnavailable = %v, want 1", ru.MaxUnavailable)
	}
	if ru.MaxSurge == nil || *ru.MaxSurge != intstr.FromInt32(0) {
		t.Errorf("rollingUpdate.maxSurge = %v, want 0", ru.MaxSurge)
	}
	if ru.Partition != nil {
		t.Errorf("rollingUpdate.partition = %v, want it left unset", ru.Partition)
	}
	if ds.Spec.BurstReplicas == nil || *ds.Spec.BurstReplicas != intstr.FromInt32(250) {
		t.Errorf("burstReplicas = %v, want 250", ds.Spec.BurstReplicas)
	}
	if got := ptr.Deref(ds.Spec.RevisionHistoryLimit, -1); got != 10 {
		t.Errorf("revisionHistoryLimit = %d, want 10", got)
	}
	// Defaulting the template would change its hash, and so make an OpenKruise-written
	// DaemonSet roll all its pods when bosun takes it over.
	if tpl := ds.Spec.Template.Spec; tpl.RestartPolicy != "" || tpl.DNSPolicy != "" || tpl.SchedulerName != "" ||
		tpl.Containers[0].TerminationMessagePath != "" || tpl.Containers[0].ImagePullPolicy != "" {
		t.Errorf("the pod template was defaulted: %+v", tpl)
	}
}

// The deprecated Surging rolling-update type is rewritten to Standard with one pod of
// surge and none unavailable.
func TestSurgingIsRewrittenToStandardWithSurge(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")

	ds := newDS("surging")
	rollingUpdate(ds).Type = appsv1alpha1.DeprecatedSurgingRollingUpdateType
	ds = e.daemonSets().Create(t, ds)

	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		t.Fatalf("updateStrategy.rollingUpdate is not set: %s", dsString(ds))
	}
	if ru.Type != appsv1alpha1.StandardRollingUpdateType {
		t.Errorf("rollingUpdate.rollingUpdateType = %q, want Standard", ru.Type)
	}
	if ru.MaxSurge == nil || *ru.MaxSurge != intstr.FromInt32(1) {
		t.Errorf("rollingUpdate.maxSurge = %v, want 1", ru.MaxSurge)
	}
	if ru.MaxUnavailable == nil || *ru.MaxUnavailable != intstr.FromInt32(0) {
		t.Errorf("rollingUpdate.maxUnavailable = %v, want 0", ru.MaxUnavailable)
	}
}

// Every invalid DaemonSet is denied, on creation and on update; nothing is stored.
func TestValidationDeniesInvalidDaemonSets(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")

	cases := []struct {
		name   string
		mutate func(*appsv1alpha1.DaemonSet)
	}{
		{"empty selector", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }},
		{"selector not matching the template labels", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		}},
		{"restartPolicy OnFailure", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}},
		{"activeDeadlineSeconds", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
		}},
		{"maxSurge and maxUnavailable both set", func(ds *appsv1alpha1.DaemonSet) {
			ru := rollingUpdate(ds)
			ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(1))
		}},
		{"maxSurge and maxUnavailable both zero", func(ds *appsv1alpha1.DaemonSet) {
			ru := rollingUpdate(ds)
			ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromString("0%"))
		}},
		{"InPlaceIfPossible with maxSurge", func(ds *appsv1alpha1.DaemonSet) {
			ru := rollingUpdate(ds)
			ru.Type = appsv1alpha1.InplaceRollingUpdateType
			ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
		}},
		{"partition over 100%", func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).Partition = ptr.To(intstr.FromString("120%"))
		}},
		{"lifecycle.inPlaceUpdate", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{InPlaceUpdate: &appsv1alpha1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS("invalid-" + string(rune('a'+i)))
			tc.mutate(ds)
			_, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Create(e.Ctx, ds, metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("creating a DaemonSet with %s was allowed", tc.name)
			}
			if _, getErr := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Get(e.Ctx, ds.Name, metav1.GetOptions{}); !apierrors.IsNotFound(getErr) {
				t.Errorf("the denied DaemonSet was stored (get: %v)", getErr)
			}
		})
	}

	t.Run("update changing the selector", func(t *testing.T) {
		ds := e.daemonSets().Create(t, newDS("immutable"))
		_, err := e.daemonSets().TryUpdate(ds.Name, func(ds *appsv1alpha1.DaemonSet) {
			// The template follows, so that only the selector's immutability can be the reason.
			ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "changed"}}
			ds.Spec.Template.Labels = map[string]string{"app": "changed"}
		})
		if err == nil {
			t.Fatal("changing spec.selector was allowed")
		}
		if got := e.daemonSets().Get(t, ds.Name).Spec.Selector.MatchLabels["app"]; got != "immutable" {
			t.Errorf("selector app=%s after the denied update, want app=immutable", got)
		}
	})
}

// Unlike OpenKruise, which answers invalid creates with 500, bosun answers 422 Invalid,
// naming the offending field, so that clients treat it as the user's mistake and do not
// retry.
func TestInvalidCreateIsRefusedWith422NamingTheField(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")

	cases := []struct {
		name   string
		mutate func(*appsv1alpha1.DaemonSet)
		fields []string // the message names one of them
	}{
		{"empty selector", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector"}},
		// OpenKruise reports the mismatch on the template labels; naming the selector is as good.
		{"selector not matching the template labels", func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		}, []string{"spec.template.metadata.labels", "spec.selector"}},
		{"partition over 100%", func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).Partition = ptr.To(intstr.FromString("120%"))
		}, []string{"spec.updateStrategy.rollingUpdate.partition"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS("invalid-" + string(rune('a'+i)))
			tc.mutate(ds)
			_, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Create(e.Ctx, ds, metav1.CreateOptions{})
			if err == nil {
				t.Fatal("the create was allowed")
			}
			if !apierrors.IsInvalid(err) || apierrors.ReasonForError(err) != metav1.StatusReasonInvalid {
				t.Fatalf("got %v (reason %q), want 422 Invalid", err, apierrors.ReasonForError(err))
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
				t.Errorf("HTTP code of %v is not %d", err, http.StatusUnprocessableEntity)
			}
			named := false
			for _, f := range tc.fields {
				named = named || strings.Contains(err.Error(), f)
			}
			if !named {
				t.Errorf("the error %q names none of %v", err, tc.fields)
			}
		})
	}
}

// openKruiseSample is an Advanced DaemonSet as OpenKruise's documentation writes it,
// unchanged: users must be able to apply their existing manifests.
const openKruiseSample = `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: sample-ds
spec:
  selector:
    matchLabels:
      app: sample-ds
  template:
    metadata:
      labels:
        app: sample-ds
    spec:
      containers:
      - name: nginx
        image: nginx:alpine
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      rollingUpdateType: Standard
      selector:
        matchLabels:
          nodeType: canary
      partition: 10
      maxUnavailable: 5
      paused: false
`

var daemonSetResource = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"}

// OpenKruise's sample applies as it is (server-side apply, as kubectl does), keeps its
// strategy, and runs one pod per node.
func TestOpenKruiseSampleApplies(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	nodes := e.createNodes(t, "a", "b")

	objs, err := framework.DecodeObjects(strings.NewReader(openKruiseSample))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding the sample: %d objects, %v", len(objs), err)
	}
	_, err = e.Dynamic.Resource(daemonSetResource).Namespace(e.Namespace).Apply(e.Ctx, objs[0].GetName(), objs[0], metav1.ApplyOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatalf("applying OpenKruise's sample: %v", err)
	}

	ds := e.daemonSets().Get(t, "sample-ds")
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Type != appsv1alpha1.StandardRollingUpdateType || ptr.Deref(ru.MaxUnavailable, intstr.IntOrString{}) != intstr.FromInt32(5) ||
		ptr.Deref(ru.Partition, intstr.IntOrString{}) != intstr.FromInt32(10) || ptr.Deref(ru.Paused, true) ||
		ru.Selector == nil || ru.Selector.MatchLabels["nodeType"] != "canary" {
		t.Errorf("the sample's rolling update read back as %s", dsString(ds))
	}
	// The rolling selector and the partition limit rolling updates only: every node gets a pod.
	pods := e.waitForDaemonPods(t, ds, nodes, "")
	e.daemonSets().WaitFor(t, ds.Name, "status desired=2 current=2", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 2 && ds.Status.CurrentNumberScheduled == 2
	})
	for _, pod := range pods {
		if pod.Spec.Containers[0].Image != "nginx:alpine" {
			t.Errorf("pod %s runs %s, want the sample's nginx:alpine", pod.Name, pod.Spec.Containers[0].Image)
		}
	}
}
