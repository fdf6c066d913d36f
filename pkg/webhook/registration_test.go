package webhook

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Match conditions are checked as the API server checks them short of compiling them, and
// a registration's copy does not share them.
func TestRegistrationMatchConditions(t *testing.T) {
	condition := func(name, expression string) admissionregistrationv1.MatchCondition {
		return admissionregistrationv1.MatchCondition{Name: name, Expression: expression}
	}
	for _, tc := range []struct {
		name       string
		conditions []admissionregistrationv1.MatchCondition
		problem    string
	}{
		{name: "none"},
		{name: "one", conditions: []admissionregistrationv1.MatchCondition{condition("node-agent", `"g" in request.userInfo.groups`)}},
		{name: "no name", conditions: []admissionregistrationv1.MatchCondition{condition("", "true")}, problem: `name "" is not a qualified name`},
		{name: "bad name", conditions: []admissionregistrationv1.MatchCondition{condition("node agent", "true")}, problem: `name "node agent" is not a qualified name`},
		{name: "twice", conditions: []admissionregistrationv1.MatchCondition{condition("a", "true"), condition("a", "false")}, problem: `name "a" is used twice`},
		{name: "no expression", conditions: []admissionregistrationv1.MatchCondition{condition("a", " ")}, problem: `match condition "a" has no expression`},
		{name: "too many", conditions: make([]admissionregistrationv1.MatchCondition, maxMatchConditions+1), problem: "65 match conditions, more than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistration("conditions.bosun.test", allow)
			r.MatchConditions = tc.conditions
			err := r.Validate()
			switch {
			case tc.problem == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("Validate: %v, want %q", err, tc.problem)
			}
		})
	}

	r := newRegistration("conditions.bosun.test", allow)
	r.MatchConditions = []admissionregistrationv1.MatchCondition{condition("a", "true")}
	copied := r.deepCopy()
	copied.MatchConditions[0].Expression = "false"
	if r.MatchConditions[0].Expression != "true" {
		t.Error("the copy shares its match conditions with the registration")
	}
}
