package noderestriction

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

var ids = Identities{ServiceAccounts: []string{"kube-system/bosun-daemon"}}

// Who writes, in the tests below.
var (
	agentA       = authenticationv1.UserInfo{Username: "bosun:daemon:node-a", Groups: []string{DaemonsGroup, "system:authenticated"}}
	agentB       = authenticationv1.UserInfo{Username: "bosun:daemon:node-b", Groups: []string{DaemonsGroup, "system:authenticated"}}
	agentNoName  = authenticationv1.UserInfo{Username: "bosun-daemon", Groups: []string{DaemonsGroup}}
	agentBadName = authenticationv1.UserInfo{Username: "bosun:daemon:Node_A", Groups: []string{DaemonsGroup}}
	// A user named like an agent but not in the group is not one, as a user named
	// system:node:x outside system:nodes is no kubelet.
	notInGroup = authenticationv1.UserInfo{Username: "bosun:daemon:node-b", Groups: []string{"system:authenticated"}}
	admin      = authenticationv1.UserInfo{Username: "admin", Groups: []string{"system:masters"}}
	manager    = authenticationv1.UserInfo{Username: "bosun-controller-manager", Groups: []string{"system:authenticated"}}
	podSAOnA   = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:bosun-daemon",
		Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{NodeNameExtra: {"node-a"}}}
	unboundSA = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:bosun-daemon",
		Groups: []string{"system:serviceaccounts"}}
	twoNodesSA = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:bosun-daemon",
		Extra: map[string]authenticationv1.ExtraValue{NodeNameExtra: {"node-a", "node-b"}}}
	otherSA = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:other",
		Extra: map[string]authenticationv1.ExtraValue{NodeNameExtra: {"node-b"}}}
)

func nodeImageRequest(user authenticationv1.UserInfo, op admissionv1.Operation, subresource, name string) *admissionv1.AdmissionRequest {
	object := fmt.Sprintf(`{"apiVersion":"apps.kruise.io/v1beta1","kind":"NodeImage","metadata":{"name":%q}}`, name)
	req := &admissionv1.AdmissionRequest{
		Kind:        metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "NodeImage"},
		Resource:    metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "nodeimages"},
		SubResource: subresource,
		Name:        name,
		Operation:   op,
		UserInfo:    user,
	}
	setObjects(req, object, object)
	return req
}

func crrRequest(user authenticationv1.UserInfo, op admissionv1.Operation, subresource, storedNode, writtenNode string) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		Kind:        metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "ContainerRecreateRequest"},
		Resource:    metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "containerrecreaterequests"},
		SubResource: subresource,
		Namespace:   "default",
		Name:        "restart-web-0",
		Operation:   op,
		UserInfo:    user,
	}
	setObjects(req, crrObject(writtenNode), crrObject(storedNode))
	return req
}

func crrObject(node string) string {
	labels := `{"crr.apps.kruise.io/pod-uid":"uid-pod"}`
	if node != "" {
		labels = fmt.Sprintf(`{"crr.apps.kruise.io/pod-uid":"uid-pod","crr.apps.kruise.io/node-name":%q}`, node)
	}
	return fmt.Sprintf(`{"apiVersion":"apps.kruise.io/v1beta1","kind":"ContainerRecreateRequest","metadata":{"name":"restart-web-0","namespace":"default","labels":%s},"spec":{"podName":"web-0"}}`, labels)
}

// setObjects fills in the objects as the API server sends them for the operation.
func setObjects(req *admissionv1.AdmissionRequest, object, old string) {
	switch req.Operation {
	case admissionv1.Create:
		req.Object = runtime.RawExtension{Raw: []byte(object)}
	case admissionv1.Update:
		req.Object, req.OldObject = runtime.RawExtension{Raw: []byte(object)}, runtime.RawExtension{Raw: []byte(old)}
	case admissionv1.Delete:
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
}

func TestNodeAgentsWriteOnlyTheirNode(t *testing.T) {
	nodeImages := NodeImageRegistrations(ids)[0].Handler
	requests := ContainerRecreateRequestRegistrations(ids)[0].Handler
	for _, tc := range []struct {
		name    string
		handler webhook.Handler
		req     *admissionv1.AdmissionRequest
		// refusal is "" for an allowed request, otherwise text the 403's message must hold.
		refusal []string
	}{
		// NodeImage.
		{name: "own NodeImage status", handler: nodeImages, req: nodeImageRequest(agentA, admissionv1.Update, "status", "node-a")},
		{name: "another node's NodeImage status", handler: nodeImages, req: nodeImageRequest(agentA, admissionv1.Update, "status", "node-b"),
			refusal: []string{`node agent "bosun:daemon:node-a" of node "node-a" may not write NodeImage "node-b", which belongs to node "node-b"`}},
		{name: "the other agent, on its own NodeImage", handler: nodeImages, req: nodeImageRequest(agentB, admissionv1.Update, "status", "node-b")},
		{name: "own NodeImage, the object itself", handler: nodeImages, req: nodeImageRequest(agentA, admissionv1.Update, "", "node-a"),
			refusal: []string{`of node "node-a" may only update the status of NodeImages, not UPDATE node-a`}},
		{name: "own NodeImage created", handler: nodeImages, req: nodeImageRequest(agentA, admissionv1.Create, "", "node-a"),
			refusal: []string{"not CREATE node-a"}},
		{name: "own NodeImage deleted", handler: nodeImages, req: nodeImageRequest(agentA, admissionv1.Delete, "", "node-a"),
			refusal: []string{"not DELETE node-a"}},
		{name: "agent without a node name", handler: nodeImages, req: nodeImageRequest(agentNoName, admissionv1.Update, "status", "node-a"),
			refusal: []string{`node agent "bosun-daemon" has no node`, "must be named bosun:daemon:<node>"}},
		{name: "agent with an invalid node name", handler: nodeImages, req: nodeImageRequest(agentBadName, admissionv1.Update, "status", "Node_A"),
			refusal: []string{"has no node"}},
		{name: "named like an agent, not in the group", handler: nodeImages, req: nodeImageRequest(notInGroup, admissionv1.Update, "status", "node-a")},
		{name: "admin", handler: nodeImages, req: nodeImageRequest(admin, admissionv1.Delete, "", "node-b")},
		{name: "manager", handler: nodeImages, req: nodeImageRequest(manager, admissionv1.Update, "", "node-b")},
		{name: "pod's service account on its node", handler: nodeImages, req: nodeImageRequest(podSAOnA, admissionv1.Update, "status", "node-a")},
		{name: "pod's service account on another node", handler: nodeImages, req: nodeImageRequest(podSAOnA, admissionv1.Update, "status", "node-b"),
			refusal: []string{`node agent "system:serviceaccount:kube-system:bosun-daemon" of node "node-a" may not write NodeImage "node-b"`}},
		{name: "service account token bound to no pod", handler: nodeImages, req: nodeImageRequest(unboundSA, admissionv1.Update, "status", "node-a"),
			refusal: []string{"has no node", NodeNameExtra}},
		{name: "service account token naming two nodes", handler: nodeImages, req: nodeImageRequest(twoNodesSA, admissionv1.Update, "status", "node-a"),
			refusal: []string{"has no node"}},
		{name: "service account not listed", handler: nodeImages, req: nodeImageRequest(otherSA, admissionv1.Update, "status", "node-a")},

		// ContainerRecreateRequest.
		{name: "status of a request on its node", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "node-a", "node-a")},
		{name: "status of a request on another node", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "node-b", "node-b"),
			refusal: []string{`node agent "bosun:daemon:node-a" of node "node-a" may not write ContainerRecreateRequest default/restart-web-0, whose pod is on node "node-b"`}},
		{name: "another node's request relabelled to its node", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "node-b", "node-a"),
			refusal: []string{`whose pod is on node "node-b"`}},
		{name: "its request relabelled to another node", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "node-a", "node-b"),
			refusal: []string{`may not change label crr.apps.kruise.io/node-name of ContainerRecreateRequest default/restart-web-0 from "node-a" to "node-b"`}},
		{name: "its request's label removed", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "node-a", ""),
			refusal: []string{`from "node-a" to ""`}},
		{name: "a request without a node label", handler: requests, req: crrRequest(agentA, admissionv1.Update, "status", "", "node-a"),
			refusal: []string{"which has no label crr.apps.kruise.io/node-name"}},
		{name: "a request on its node, the object itself", handler: requests, req: crrRequest(agentA, admissionv1.Update, "", "node-a", "node-a"),
			refusal: []string{"may only update the status of ContainerRecreateRequests, not UPDATE restart-web-0"}},
		{name: "a request created", handler: requests, req: crrRequest(agentA, admissionv1.Create, "", "", "node-a"),
			refusal: []string{"not CREATE"}},
		{name: "a request on its node deleted", handler: requests, req: crrRequest(agentA, admissionv1.Delete, "", "node-a", ""),
			refusal: []string{"not DELETE"}},
		{name: "agent without a node name, on a request", handler: requests, req: crrRequest(agentNoName, admissionv1.Update, "status", "node-a", "node-a"),
			refusal: []string{"has no node"}},
		{name: "pod's service account, request on its node", handler: requests, req: crrRequest(podSAOnA, admissionv1.Update, "status", "node-a", "node-a")},
		{name: "pod's service account, request on another node", handler: requests, req: crrRequest(podSAOnA, admissionv1.Update, "status", "node-b", "node-b"),
			refusal: []string{`whose pod is on node "node-b"`}},
		{name: "unbound service account, request", handler: requests, req: crrRequest(unboundSA, admissionv1.Update, "status", "node-a", "node-a"),
			refusal: []string{"has no node"}},
		{name: "admin relabels a request", handler: requests, req: crrRequest(admin, admissionv1.Update, "", "node-a", "node-b")},
		{name: "manager writes a request's status on any node", handler: requests, req: crrRequest(manager, admissionv1.Update, "status", "node-b", "node-b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.handler.Handle(context.Background(), tc.req)
			if len(tc.refusal) == 0 {
				if !resp.Allowed {
					t.Fatalf("refused: %d %s", resp.Result.Code, resp.Result.Message)
				}
				return
			}
			if resp.Allowed {
				t.Fatalf("allowed, want a refusal saying %q", tc.refusal)
			}
			if resp.Result.Code != 403 || resp.Result.Reason != metav1.StatusReasonForbidden {
				t.Errorf("refused with %d %s, want 403 Forbidden", resp.Result.Code, resp.Result.Reason)
			}
			for _, text := range tc.refusal {
				if !strings.Contains(resp.Result.Message, text) {
					t.Errorf("the refusal %q does not say %q", resp.Result.Message, text)
				}
			}
		})
	}
}

// An agent's request whose objects cannot be read is refused as a bad request, never
// allowed.
func TestUnreadableRequestsOfAgentsAreRefused(t *testing.T) {
	handler := ContainerRecreateRequestRegistrations(ids)[0].Handler
	for name, req := range map[string]*admissionv1.AdmissionRequest{
		"no oldObject": func() *admissionv1.AdmissionRequest {
			req := crrRequest(agentA, admissionv1.Update, "status", "node-a", "node-a")
			req.OldObject.Raw = nil
			return req
		}(),
		"oldObject not JSON": func() *admissionv1.AdmissionRequest {
			req := crrRequest(agentA, admissionv1.Update, "status", "node-a", "node-a")
			req.OldObject.Raw = []byte(`{"metadata":`)
			return req
		}(),
		"object's labels not a map": func() *admissionv1.AdmissionRequest {
			req := crrRequest(agentA, admissionv1.Update, "status", "node-a", "node-a")
			req.Object.Raw = []byte(`{"metadata":{"labels":["node-a"]}}`)
			return req
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			resp := handler.Handle(context.Background(), req)
			if resp.Allowed || resp.Result.Code != 400 {
				t.Fatalf("answered %+v, want a 400", resp)
			}
		})
	}
}

// The registrations: both served versions, the object and its status, every write, Fail,
// and match conditions naming exactly the identities the handler judges.
func TestRegistrations(t *testing.T) {
	for _, reg := range append(NodeImageRegistrations(ids), ContainerRecreateRequestRegistrations(Identities{})...) {
		if err := reg.Validate(); err != nil {
			t.Error(err)
		}
		if reg.Type != webhook.Validating || reg.FailurePolicy != nil {
			t.Errorf("%s: type %s, failure policy %v; want Validating with the default, Fail", reg.Name, reg.Type, reg.FailurePolicy)
		}
		rule := reg.Rules[0]
		if got := fmt.Sprint(rule.Operations, rule.APIVersions, len(rule.Resources)); got != "[CREATE UPDATE DELETE] [v1alpha1 v1beta1] 2" {
			t.Errorf("%s: rule %v", reg.Name, rule)
		}
	}
	got := NodeImageRegistrations(ids)[0].MatchConditions
	want := `("bosun:daemons" in request.userInfo.groups) || (request.userInfo.username in ["system:serviceaccount:kube-system:bosun-daemon"])`
	if len(got) != 1 || normalize(got[0].Expression) != normalize(want) {
		t.Errorf("match conditions %v, want one: %s", got, want)
	}
	got = ContainerRecreateRequestRegistrations(Identities{})[0].MatchConditions
	if want := `"bosun:daemons" in request.userInfo.groups`; len(got) != 1 || normalize(got[0].Expression) != normalize(want) {
		t.Errorf("match conditions without service accounts %v, want one: %s", got, want)
	}
}

// normalize drops the has() guards, which only keep an absent field from failing the
// expression, so that the test reads as the rule.
func normalize(expression string) string {
	for _, guard := range []string{"has(request.userInfo.groups) && ", "has(request.userInfo.username) && "} {
		expression = strings.ReplaceAll(expression, guard, "")
	}
	return expression
}

func TestIdentitiesValidate(t *testing.T) {
	for _, good := range [][]string{nil, {"kube-system/bosun-daemon"}, {"a/b", "c/d.e"}} {
		if err := (Identities{ServiceAccounts: good}).Validate(); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
	for _, bad := range [][]string{{"bosun-daemon"}, {"kube-system/"}, {"/bosun-daemon"}, {"Kube/x"}, {"a/b/c"}} {
		if err := (Identities{ServiceAccounts: bad}).Validate(); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
