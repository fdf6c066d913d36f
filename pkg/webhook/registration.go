package webhook

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type says whether a webhook may change the object (mutating) or only judge it
// (validating). The API server calls every mutating webhook before any validating one.
type Type string

const (
	Mutating   Type = "Mutating"
	Validating Type = "Validating"
)

// Handler answers one admission request. It returns the response without UID: the server
// copies it from the request. ctx carries the per-request deadline and a logger naming the
// webhook and the object.
type Handler interface {
	Handle(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
}

// HandlerFunc is a function that is a Handler.
type HandlerFunc func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return f(ctx, req)
}

// Registration is everything the server and the webhook configurations need to know about
// one webhook: a resource's admission package registers one per webhook, and nothing else.
type Registration struct {
	// Name is the webhook's name in its configuration, a DNS-style name with at least three
	// segments (for example "mdaemonset.kb.io", the name OpenKruise gives the same webhook).
	Name string
	// Path is where the server serves it and where the webhook configuration points, for
	// example "/mutate-apps-kruise-io-daemonset".
	Path string
	// LegacyPaths are further paths the server answers on with the same handler but that no
	// configuration names: the paths of earlier releases, which the webhook configurations
	// of replicas still running those releases point at during a rolling upgrade.
	LegacyPaths []string
	// Type is Mutating or Validating.
	Type Type
	// Rules are the resources and operations the API server sends to it.
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy is what the API server does when the webhook cannot be reached; Fail
	// when nil.
	FailurePolicy *admissionregistrationv1.FailurePolicyType
	// NamespaceSelector and ObjectSelector narrow the requests sent; everything when nil.
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// MatchConditions are CEL expressions on the request that must all hold for the API
	// server to call the webhook; every matching request when empty. A request the
	// conditions exclude costs nothing: the API server decides without calling out.
	MatchConditions []admissionregistrationv1.MatchCondition
	// TimeoutSeconds bounds the API server's call (1 to 30); 10 when zero.
	TimeoutSeconds int32
	// Handler answers the requests.
	Handler Handler
}

// DefaultTimeoutSeconds is the API server's call timeout for a registration without one,
// the API's own default.
const DefaultTimeoutSeconds = 10

var webhookName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){2,}$`)

// Validate returns what is wrong with the registration, in one error, or nil. The same
// rules as the API server's, so that a bad registration fails at start-up rather than when
// the manager writes its webhook configuration.
func (r Registration) Validate() error {
	var problems []string
	if !webhookName.MatchString(r.Name) || len(r.Name) > 253 {
		problems = append(problems, fmt.Sprintf("name %q is not a fully qualified name of at least three segments", r.Name))
	}
	for _, path := range append([]string{r.Path}, r.LegacyPaths...) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
			problems = append(problems, fmt.Sprintf("path %q must start with / and hold no query or fragment", path))
		}
	}
	if r.Type != Mutating && r.Type != Validating {
		problems = append(problems, fmt.Sprintf("type %q is neither %s nor %s", r.Type, Mutating, Validating))
	}
	if len(r.Rules) == 0 {
		problems = append(problems, "no rules: the API server would never call it")
	}
	if r.TimeoutSeconds < 0 || r.TimeoutSeconds > 30 {
		problems = append(problems, fmt.Sprintf("timeoutSeconds %d is outside 1..30", r.TimeoutSeconds))
	}
	if r.Handler == nil {
		problems = append(problems, "no handler")
	}
	problems = append(problems, matchConditionProblems(r.MatchConditions)...)
	if len(problems) > 0 {
		return fmt.Errorf("webhook %q: %s", r.Name, strings.Join(problems, "; "))
	}
	return nil
}

// deepCopy returns a copy of r sharing nothing with it but the handler, so that the server's
// registrations and the callers' cannot change one another.
func (r Registration) deepCopy() Registration {
	out := r
	out.LegacyPaths = slices.Clone(r.LegacyPaths)
	if r.Rules != nil {
		out.Rules = make([]admissionregistrationv1.RuleWithOperations, len(r.Rules))
		for i := range r.Rules {
			r.Rules[i].DeepCopyInto(&out.Rules[i])
		}
	}
	if r.FailurePolicy != nil {
		policy := *r.FailurePolicy
		out.FailurePolicy = &policy
	}
	out.NamespaceSelector = r.NamespaceSelector.DeepCopy()
	out.ObjectSelector = r.ObjectSelector.DeepCopy()
	out.MatchConditions = slices.Clone(r.MatchConditions)
	return out
}

// maxMatchConditions is the most match conditions the API server accepts on one webhook.
const maxMatchConditions = 64

// matchConditionProblems returns what the API server would refuse in conditions short of
// compiling the expressions, which only it can do: a name each, unique and qualified, and
// an expression each.
func matchConditionProblems(conditions []admissionregistrationv1.MatchCondition) []string {
	var problems []string
	if len(conditions) > maxMatchConditions {
		problems = append(problems, fmt.Sprintf("%d match conditions, more than %d", len(conditions), maxMatchConditions))
	}
	seen := map[string]bool{}
	for i, c := range conditions {
		switch {
		case !matchConditionName.MatchString(c.Name) || len(c.Name) > 63:
			problems = append(problems, fmt.Sprintf("match condition %d: name %q is not a qualified name", i, c.Name))
		case seen[c.Name]:
			problems = append(problems, fmt.Sprintf("match condition %d: name %q is used twice", i, c.Name))
		}
		seen[c.Name] = true
		if strings.TrimSpace(c.Expression) == "" {
			problems = append(problems, fmt.Sprintf("match condition %q has no expression", c.Name))
		}
	}
	return problems
}

var matchConditionName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
