package workload

import (
	"errors"
	"fmt"
	"testing"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// chainCluster holds controller chains of every shape Chain meets.
func chainCluster() cluster {
	rs := func(name string, controller *metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: objectMeta(name, types.UID("uid-"+name), controller),
			Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: selector(map[string]string{"rs": name})},
		}
	}
	deployment := func(name string, controller *metav1.OwnerReference) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: objectMeta(name, types.UID("uid-"+name), controller),
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: selector(map[string]string{"deployment": name})},
		}
	}
	c := cluster{
		cached: []runtime.Object{
			deployment("web", nil),
			rs("web-1", controllerRef(deploymentKind, "web", "uid-web")),
			rs("lost-1", controllerRef(deploymentKind, "gone", "uid-gone")),
			rs("stale-1", controllerRef(deploymentKind, "web", "uid-earlier-web")),
			rs("canary-1", controllerRef(rolloutKind, "canary", "uid-canary")),
			rs("adrift-1", controllerRef(rolloutKind, "vanished", "uid-vanished")),
			deployment("managed", controllerRef(widgetKind, "platform", "uid-platform")),
			rs("managed-1", controllerRef(deploymentKind, "managed", "uid-managed")),
			rs("loop-b", controllerRef(deploymentKind, "loop-a", "uid-loop-a")),
			deployment("loop-a", controllerRef(replicaSetKind, "loop-b", "uid-loop-b")),
			&appsv1.StatefulSet{ObjectMeta: objectMeta("db", "uid-db", nil)},
			&kruiseappsv1beta1.DaemonSet{
				ObjectMeta: objectMeta("agent", "uid-agent", nil),
				Status:     kruiseappsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 7},
			},
		},
		live: []*metav1.PartialObjectMetadata{
			liveObject(rolloutKind, "canary", "uid-canary", controllerRef(widgetKind, "platform", "uid-platform")),
			liveObject(widgetKind, "platform", "uid-platform", nil),
			liveObject(widgetKind, "self", "uid-self", controllerRef(widgetKind, "self", "uid-self")),
			liveObject(widgetKind, "child-of-broken", "uid-child-of-broken", controllerRef(widgetKind, "broken", "uid-broken")),
			liveObject(widgetKind, "broken", "uid-broken", nil),
		},
		scales: map[string]scaleAnswer{
			"rollouts/canary":  scaleOf(6, "app=canary"),
			"widgets/platform": scaleOf(9, "app=platform"),
		},
	}
	// link-0 is controlled by link-1, ... link-11 by nothing: a chain of 12.
	for i := range 12 {
		var controller *metav1.OwnerReference
		if i < 11 {
			controller = controllerRef(widgetKind, fmt.Sprintf("link-%d", i+1), types.UID(fmt.Sprintf("uid-link-%d", i+1)))
		}
		c.live = append(c.live, liveObject(widgetKind, fmt.Sprintf("link-%d", i), types.UID(fmt.Sprintf("uid-link-%d", i)), controller))
	}
	return c
}

func TestChainAndCountingOwner(t *testing.T) {
	rsRef := func(name string) *metav1.OwnerReference {
		return controllerRef(replicaSetKind, name, types.UID("uid-"+name))
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		// wantOff and wantOn are the chains without and with WithOwnerChain; the counting
		// owner is their last workload.
		wantOff, wantOn []string
		// goneOff and goneOn say whether the chain ended at a controller that is missing,
		// which marks its last workload ControllerGone.
		goneOff, goneOn bool
	}{
		{name: "no controller"},
		{name: "controller gone", ref: rsRef("nope")},
		{
			name:    "ReplicaSet of a Deployment",
			ref:     rsRef("web-1"),
			wantOff: []string{"ReplicaSet/web-1", "Deployment/web"},
			wantOn:  []string{"ReplicaSet/web-1", "Deployment/web"},
		},
		{
			name:    "ReplicaSet of a Deployment of another workload",
			ref:     rsRef("managed-1"),
			wantOff: []string{"ReplicaSet/managed-1", "Deployment/managed"},
			wantOn:  []string{"ReplicaSet/managed-1", "Deployment/managed", "Widget/platform"},
		},
		{
			name:    "ReplicaSet of another rollout controller",
			ref:     rsRef("canary-1"),
			wantOff: []string{"ReplicaSet/canary-1"},
			wantOn:  []string{"ReplicaSet/canary-1", "Rollout/canary", "Widget/platform"},
		},
		{
			name:    "workload that is not a ReplicaSet, with a controller",
			ref:     controllerRef(rolloutKind, "canary", "uid-canary"),
			wantOff: []string{"Rollout/canary"},
			wantOn:  []string{"Rollout/canary", "Widget/platform"},
		},
		{
			name:    "Deployment at the top",
			ref:     controllerRef(deploymentKind, "web", "uid-web"),
			wantOff: []string{"Deployment/web"},
			wantOn:  []string{"Deployment/web"},
		},
		{
			name:    "StatefulSet",
			ref:     controllerRef(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "db", "uid-db"),
			wantOff: []string{"StatefulSet/db"},
			wantOn:  []string{"StatefulSet/db"},
		},
		{
			name:    "Advanced DaemonSet",
			ref:     controllerRef(daemonSetKind, "agent", "uid-agent"),
			wantOff: []string{"DaemonSet/agent"},
			wantOn:  []string{"DaemonSet/agent"},
		},
		{
			name:    "ReplicaSet whose Deployment is gone",
			ref:     rsRef("lost-1"),
			wantOff: []string{"ReplicaSet/lost-1"},
			wantOn:  []string{"ReplicaSet/lost-1"},
			goneOff: true,
			goneOn:  true,
		},
		{
			name:    "ReplicaSet whose Deployment was re-created",
			ref:     rsRef("stale-1"),
			wantOff: []string{"ReplicaSet/stale-1"},
			wantOn:  []string{"ReplicaSet/stale-1"},
			goneOff: true,
			goneOn:  true,
		},
		{
			// Without the owner chain only a Deployment is followed, so nothing is missed.
			name:    "ReplicaSet whose other rollout controller is gone",
			ref:     rsRef("adrift-1"),
			wantOff: []string{"ReplicaSet/adrift-1"},
			wantOn:  []string{"ReplicaSet/adrift-1"},
			goneOn:  true,
		},
		{
			name:    "Widget under a Widget, followed only with the owner chain",
			ref:     controllerRef(widgetKind, "child-of-broken", "uid-child-of-broken"),
			wantOff: []string{"Widget/child-of-broken"},
			wantOn:  []string{"Widget/child-of-broken", "Widget/broken"},
		},
		{
			name:    "cycle of two",
			ref:     rsRef("loop-b"),
			wantOff: []string{"ReplicaSet/loop-b", "Deployment/loop-a"},
			wantOn:  []string{"ReplicaSet/loop-b", "Deployment/loop-a"},
		},
		{
			name:    "workload controlling itself",
			ref:     controllerRef(widgetKind, "self", "uid-self"),
			wantOff: []string{"Widget/self"},
			wantOn:  []string{"Widget/self"},
		},
		{
			name:    "chain longer than ten links",
			ref:     controllerRef(widgetKind, "link-0", "uid-link-0"),
			wantOff: []string{"Widget/link-0"},
			wantOn: []string{"Widget/link-0", "Widget/link-1", "Widget/link-2", "Widget/link-3", "Widget/link-4",
				"Widget/link-5", "Widget/link-6", "Widget/link-7", "Widget/link-8", "Widget/link-9"},
		},
	}
	for _, tc := range tests {
		for _, ownerChain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ownerChain=%v", tc.name, ownerChain), func(t *testing.T) {
				want, wantGone := tc.wantOff, tc.goneOff
				if ownerChain {
					want, wantGone = tc.wantOn, tc.goneOn
				}
				f := newFixture(t, chainCluster(), WithOwnerChain(ownerChain))

				chain, err := f.finder.Chain(f.ctx, ns, tc.ref)
				if err != nil {
					t.Fatalf("Chain: %v", err)
				}
				if diff := cmp.Diff(want, names(chain)); diff != "" {
					t.Errorf("Chain (-want +got):\n%s", diff)
				}
				for i, w := range chain {
					if gone := wantGone && i == len(chain)-1; w.ControllerGone != gone {
						t.Errorf("%s/%s: ControllerGone %v, want %v", w.Kind, w.Name, w.ControllerGone, gone)
					}
				}

				owner, err := f.finder.CountingOwner(f.ctx, ns, tc.ref)
				if err != nil {
					t.Fatalf("CountingOwner: %v", err)
				}
				var wantOwner []string
				if len(want) > 0 {
					wantOwner = want[len(want)-1:]
				}
				var gotOwner []*Workload
				if owner != nil {
					gotOwner = []*Workload{owner}
				}
				if diff := cmp.Diff(wantOwner, names(gotOwner)); diff != "" {
					t.Errorf("CountingOwner (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// The counting owner carries the replica count and selector a budget is sized by.
func TestCountingOwnerReplicas(t *testing.T) {
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		opts []Option
		want *view
	}{
		{
			name: "Deployment's count for its ReplicaSet's pods",
			ref:  controllerRef(replicaSetKind, "web-1", "uid-web-1"),
			want: &view{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: "uid-web",
				Replicas: 4, HasReplicas: true, Selector: "deployment=web"},
		},
		{
			name: "ReplicaSet's own count under another rollout controller",
			ref:  controllerRef(replicaSetKind, "canary-1", "uid-canary-1"),
			want: &view{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "canary-1", UID: "uid-canary-1",
				Replicas: 2, HasReplicas: true, Selector: "rs=canary-1", Controller: controllerRef(rolloutKind, "canary", "uid-canary")},
		},
		{
			name: "top controller's scale with WithOwnerChain",
			ref:  controllerRef(replicaSetKind, "canary-1", "uid-canary-1"),
			opts: []Option{WithOwnerChain(true)},
			want: &view{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "platform", UID: "uid-platform",
				Replicas: 9, HasReplicas: true, Selector: "app=platform"},
		},
		{
			// Its own count still shows; the mark tells callers not to believe it.
			name: "ReplicaSet whose Deployment is gone",
			ref:  controllerRef(replicaSetKind, "lost-1", "uid-lost-1"),
			want: &view{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "lost-1", UID: "uid-lost-1",
				Replicas: 2, HasReplicas: true, Selector: "rs=lost-1", Controller: controllerRef(deploymentKind, "gone", "uid-gone"),
				ControllerGone: true},
		},
		{
			name: "Advanced DaemonSet without a count",
			ref:  controllerRef(daemonSetKind, "agent", "uid-agent"),
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent", Selector: "<nil>"},
		},
		{
			name: "Advanced DaemonSet counted with WithDaemonSetReplicas",
			ref:  controllerRef(daemonSetKind, "agent", "uid-agent"),
			opts: []Option{WithDaemonSetReplicas(true), WithOwnerChain(true)},
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent",
				Replicas: 7, HasReplicas: true, Selector: "<nil>"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, chainCluster(), tc.opts...)
			got, err := f.finder.CountingOwner(f.ctx, ns, tc.ref)
			if err != nil {
				t.Fatalf("CountingOwner: %v", err)
			}
			if diff := cmp.Diff(tc.want, viewOf(got)); diff != "" {
				t.Errorf("CountingOwner (-want +got):\n%s", diff)
			}
		})
	}
}

// A failed read anywhere in the chain fails the lookup: a partial chain would name the
// wrong counting owner.
func TestChainReadErrors(t *testing.T) {
	boom := errors.New("boom")
	f := newFixture(t, chainCluster(), WithOwnerChain(true))
	f.metadata.PrependReactor("get", "widgets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.GetAction).GetName() == "broken" {
			return true, nil, boom
		}
		return false, nil, nil
	})
	ref := controllerRef(widgetKind, "child-of-broken", "uid-child-of-broken")

	chain, err := f.finder.Chain(f.ctx, ns, ref)
	if !errors.Is(err, boom) || chain != nil {
		t.Errorf("Chain = %v, %v; want an error wrapping %q", names(chain), err, boom)
	}
	owner, err := f.finder.CountingOwner(f.ctx, ns, ref)
	if !errors.Is(err, boom) || owner != nil {
		t.Errorf("CountingOwner = %v, %v; want an error wrapping %q", owner, err, boom)
	}
}

// CachedChain walks what the caches hold exactly as Chain does and stops, without an API
// call, at the first reference Chain would read live.
func TestCachedChain(t *testing.T) {
	rsRef := func(name string) *metav1.OwnerReference {
		return controllerRef(replicaSetKind, name, types.UID("uid-"+name))
	}
	tests := []struct {
		name       string
		ref        *metav1.OwnerReference
		ownerChain bool
		want       []string
		// wantBeyond is "Kind/name" of the reference the walk stopped at; empty for none.
		wantBeyond string
		// wantGone marks the last workload of want ControllerGone.
		wantGone bool
	}{
		{name: "no controller", ownerChain: true},
		{name: "controller gone", ref: rsRef("nope"), ownerChain: true},
		{name: "all cached", ref: rsRef("web-1"), ownerChain: true, want: []string{"ReplicaSet/web-1", "Deployment/web"}},
		{
			name: "live workload above cached ones", ref: rsRef("managed-1"), ownerChain: true,
			want: []string{"ReplicaSet/managed-1", "Deployment/managed"}, wantBeyond: "Widget/platform",
		},
		{
			name: "live workload above cached ones, without the owner chain", ref: rsRef("managed-1"),
			want: []string{"ReplicaSet/managed-1", "Deployment/managed"},
		},
		{
			name: "other rollout controller", ref: rsRef("canary-1"), ownerChain: true,
			want: []string{"ReplicaSet/canary-1"}, wantBeyond: "Rollout/canary",
		},
		{name: "other rollout controller, without the owner chain", ref: rsRef("canary-1"), want: []string{"ReplicaSet/canary-1"}},
		{name: "live workload first", ref: controllerRef(rolloutKind, "canary", "uid-canary"), wantBeyond: "Rollout/canary"},
		// Whether the Rollout exists is for Chain to find out: nothing is marked gone.
		{
			name: "vanished live controller", ref: rsRef("adrift-1"), ownerChain: true,
			want: []string{"ReplicaSet/adrift-1"}, wantBeyond: "Rollout/vanished",
		},
		{
			name: "cached controller gone", ref: rsRef("lost-1"), ownerChain: true,
			want: []string{"ReplicaSet/lost-1"}, wantGone: true,
		},
		{name: "cycle", ref: rsRef("loop-b"), ownerChain: true, want: []string{"ReplicaSet/loop-b", "Deployment/loop-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, chainCluster(), WithOwnerChain(tc.ownerChain))
			chain, beyond, err := f.finder.CachedChain(f.ctx, ns, tc.ref)
			if err != nil {
				t.Fatalf("CachedChain: %v", err)
			}
			if diff := cmp.Diff(tc.want, names(chain)); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
			var gotBeyond string
			if beyond != nil {
				gotBeyond = beyond.Kind + "/" + beyond.Name
			}
			if gotBeyond != tc.wantBeyond {
				t.Errorf("beyond %q, want %q", gotBeyond, tc.wantBeyond)
			}
			for i, w := range chain {
				if gone := tc.wantGone && i == len(chain)-1; w.ControllerGone != gone {
					t.Errorf("%s/%s: ControllerGone %v, want %v", w.Kind, w.Name, w.ControllerGone, gone)
				}
			}
			if actions := append(f.metadata.Actions(), f.scales.Actions()...); len(actions) != 0 {
				t.Errorf("API calls: %v", actions)
			}
		})
	}
}

// A reference CachedChain returns is a copy: the caller may keep it.
func TestCachedChainBeyondIsACopy(t *testing.T) {
	f := newFixture(t, chainCluster(), WithOwnerChain(true))
	ref := controllerRef(replicaSetKind, "canary-1", "uid-canary-1")
	_, beyond, err := f.finder.CachedChain(f.ctx, ns, ref)
	if err != nil || beyond == nil {
		t.Fatalf("CachedChain: %v, %v", beyond, err)
	}
	beyond.Name = "changed"
	_, again, _ := f.finder.CachedChain(f.ctx, ns, ref)
	if again.Name != "canary" {
		t.Errorf("the cached ReplicaSet's reference was changed through beyond: %q", again.Name)
	}
}
