package noderestriction

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names and paths of the two webhooks. They are bosun's own (OpenKruise has no such
// check), hence not under kb.io.
const (
	NodeImageName                = "vnoderestriction-nodeimage.bosun.dev"
	NodeImagePath                = "/validate-noderestriction-nodeimage"
	ContainerRecreateRequestName = "vnoderestriction-containerrecreaterequest.bosun.dev"
	ContainerRecreateRequestPath = "/validate-noderestriction-containerrecreaterequest"
)

// statusSubresource is the only subresource a node agent writes.
const statusSubresource = "status"

// NodeImageRegistrations is the webhook that keeps node agents to their own node's
// NodeImage.
func NodeImageRegistrations(ids Identities) []webhook.Registration {
	return []webhook.Registration{registration(ids, NodeImageName, NodeImagePath, "nodeimages",
		webhook.HandlerFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return answer(ctx, req, ids, judgeNodeImage)
		}))}
}

// ContainerRecreateRequestRegistrations is the webhook that keeps node agents to the
// ContainerRecreateRequests of pods on their node.
func ContainerRecreateRequestRegistrations(ids Identities) []webhook.Registration {
	return []webhook.Registration{registration(ids, ContainerRecreateRequestName, ContainerRecreateRequestPath, "containerrecreaterequests",
		webhook.HandlerFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return answer(ctx, req, ids, judgeContainerRecreateRequest)
		}))}
}

// registration is the webhook of resource: every write of the object and of its status,
// in both served versions, by the identities of ids.
func registration(ids Identities, name, path, resource string, handler webhook.Handler) webhook.Registration {
	return webhook.Registration{
		Name: name,
		Path: path,
		Type: webhook.Validating,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{appsv1beta1.GroupName},
				APIVersions: []string{"v1alpha1", "v1beta1"},
				Resources:   []string{resource, resource + "/" + statusSubresource},
			},
		}},
		MatchConditions: ids.matchConditions(),
		Handler:         handler,
	}
}

// judgement decides the request of node agent d; it returns why the request is refused,
// "" when it is allowed, and err when the request cannot be read.
type judgement func(req *admissionv1.AdmissionRequest, d daemon) (refusal string, err error)

// answer lets through the requests of identities that are not node agents, and judges the
// others with judge.
func answer(ctx context.Context, req *admissionv1.AdmissionRequest, ids Identities, judge judgement) *admissionv1.AdmissionResponse {
	d, ok := ids.daemonOf(req.UserInfo)
	if !ok {
		return webhook.Allowed()
	}
	if d.node == "" {
		return webhook.Denied(http.StatusForbidden, "%s", unknownNode(req, d))
	}
	refusal, err := judge(req, d)
	if err != nil {
		return webhook.Errored(http.StatusBadRequest, err)
	}
	if refusal != "" {
		klog.FromContext(ctx).V(2).Info("Refused a node agent's write beyond its node", "user", d.user, "node", d.node, "reason", refusal)
		return webhook.Denied(http.StatusForbidden, "%s", refusal)
	}
	return webhook.Allowed()
}

// unknownNode is the refusal of a node agent whose node cannot be told.
func unknownNode(req *admissionv1.AdmissionRequest, d daemon) string {
	if slices.Contains(req.UserInfo.Groups, DaemonsGroup) {
		return fmt.Sprintf("node agent %q has no node: a member of group %s must be named %s<node>", d.user, DaemonsGroup, DaemonUserPrefix)
	}
	return fmt.Sprintf("node agent %q has no node: its token must name exactly one in the user extra %s, as the token of a pod does", d.user, NodeNameExtra)
}

// onlyStatusUpdates is the refusal of any write but a status update, "" for one.
func onlyStatusUpdates(req *admissionv1.AdmissionRequest, d daemon, kind string) string {
	if req.Operation == admissionv1.Update && req.SubResource == statusSubresource {
		return ""
	}
	what := string(req.Operation)
	if req.SubResource != "" {
		what += " of subresource " + req.SubResource
	}
	return fmt.Sprintf("node agent %q of node %q may only update the status of %ss, not %s %s", d.user, d.node, kind, what, req.Name)
}

// judgeNodeImage allows the status update of the NodeImage named after the agent's node,
// which is the NodeImage of that node.
func judgeNodeImage(req *admissionv1.AdmissionRequest, d daemon) (string, error) {
	if refusal := onlyStatusUpdates(req, d, "NodeImage"); refusal != "" {
		return refusal, nil
	}
	if req.Name != d.node {
		return fmt.Sprintf("node agent %q of node %q may not write NodeImage %q, which belongs to node %q", d.user, d.node, req.Name, req.Name), nil
	}
	return "", nil
}

// judgeContainerRecreateRequest allows the status update of a request whose node label
// names the agent's node, as stored and as written.
func judgeContainerRecreateRequest(req *admissionv1.AdmissionRequest, d daemon) (string, error) {
	if refusal := onlyStatusUpdates(req, d, "ContainerRecreateRequest"); refusal != "" {
		return refusal, nil
	}
	stored, err := nodeLabel(req.OldObject.Raw, "oldObject")
	if err != nil {
		return "", err
	}
	written, err := nodeLabel(req.Object.Raw, "object")
	if err != nil {
		return "", err
	}
	key := appsv1beta1.ContainerRecreateRequestNodeNameKey
	ref := klog.KRef(req.Namespace, req.Name).String()
	switch {
	case stored == "":
		return fmt.Sprintf("node agent %q of node %q may not write ContainerRecreateRequest %s, which has no label %s", d.user, d.node, ref, key), nil
	case stored != d.node:
		return fmt.Sprintf("node agent %q of node %q may not write ContainerRecreateRequest %s, whose pod is on node %q", d.user, d.node, ref, stored), nil
	case written != stored:
		return fmt.Sprintf("node agent %q of node %q may not change label %s of ContainerRecreateRequest %s from %q to %q", d.user, d.node, key, ref, stored, written), nil
	}
	return "", nil
}

// nodeLabel reads the node label of the object in raw, which the request holds under
// name. Only the metadata is read: it is the same in both versions.
func nodeLabel(raw []byte, name string) (string, error) {
	if len(raw) == 0 {
		return "", fmt.Errorf("the request has no %s", name)
	}
	var object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &object); err != nil {
		return "", fmt.Errorf("decoding the metadata of %s: %w", name, err)
	}
	return object.Metadata.Labels[appsv1beta1.ContainerRecreateRequestNodeNameKey], nil
}
