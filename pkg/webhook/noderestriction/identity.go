package noderestriction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// DaemonsGroup is the group of node agents' per-node users, like kubelets'
	// system:nodes.
	DaemonsGroup = "bosun:daemons"
	// DaemonUserPrefix starts a node agent's user name; the node's name follows, like
	// kubelets' system:node:<name>.
	DaemonUserPrefix = "bosun:daemon:"
	// NodeNameExtra is the user extra in which the API server names the node of the pod a
	// service account token is bound to.
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// DefaultDaemonServiceAccount is the service account of the agents' DaemonSet in
	// config/daemonset.
	DefaultDaemonServiceAccount = "kube-system/bosun-daemon"
)

// serviceAccountUserPrefix starts the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountUserPrefix = "system:serviceaccount:"

// Identities says which requests come from node agents: every user in DaemonsGroup, and
// the service accounts listed.
type Identities struct {
	// ServiceAccounts are <namespace>/<name> of the service accounts the agents run as.
	ServiceAccounts []string
}

// daemon is the node agent a request comes from. node is empty when it cannot be told.
type daemon struct {
	user string
	node string
}

// daemonOf returns the node agent user is, and false when it is none.
func (ids Identities) daemonOf(user authenticationv1.UserInfo) (daemon, bool) {
	if slices.Contains(user.Groups, DaemonsGroup) {
		return daemon{user: user.Username, node: nodeOfDaemonUser(user.Username)}, true
	}
	if slices.Contains(ids.serviceAccountUsers(), user.Username) {
		return daemon{user: user.Username, node: nodeOfServiceAccount(user.Extra)}, true
	}
	return daemon{}, false
}

// nodeOfDaemonUser is the node in a user name bosun:daemon:<node>, or "".
func nodeOfDaemonUser(username string) string {
	node, ok := strings.CutPrefix(username, DaemonUserPrefix)
	if !ok || len(validation.IsDNS1123Subdomain(node)) > 0 {
		return ""
	}
	return node
}

// nodeOfServiceAccount is the node a service account token is bound to, or "": the one
// value of NodeNameExtra.
func nodeOfServiceAccount(extra map[string]authenticationv1.ExtraValue) string {
	values := extra[NodeNameExtra]
	if len(values) != 1 || len(validation.IsDNS1123Subdomain(values[0])) > 0 {
		return ""
	}
	return values[0]
}

// serviceAccountUsers are the user names of ids.ServiceAccounts.
func (ids Identities) serviceAccountUsers() []string {
	users := make([]string, 0, len(ids.ServiceAccounts))
	for _, sa := range ids.ServiceAccounts {
		namespace, name, ok := strings.Cut(sa, "/")
		if !ok {
			continue
		}
		users = append(users, serviceAccountUserPrefix+namespace+":"+name)
	}
	return users
}

// Validate returns what is wrong with the service accounts listed.
func (ids Identities) Validate() error {
	for _, sa := range ids.ServiceAccounts {
		namespace, name, ok := strings.Cut(sa, "/")
		if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("service account %q is not <namespace>/<name>", sa)
		}
	}
	return nil
}

// matchConditions are the conditions under which the API server calls the webhooks: the
// request comes from one of ids, by the same test as daemonOf.
func (ids Identities) matchConditions() []admissionregistrationv1.MatchCondition {
	expression := "has(request.userInfo.groups) && " + strconv.Quote(DaemonsGroup) + " in request.userInfo.groups"
	if users := ids.serviceAccountUsers(); len(users) > 0 {
		quoted := make([]string, len(users))
		for i, user := range users {
			quoted[i] = strconv.Quote(user)
		}
		expression = "(" + expression + ") || (has(request.userInfo.username) && request.userInfo.username in [" + strings.Join(quoted, ", ") + "])"
	}
	return []admissionregistrationv1.MatchCondition{{Name: "node-agent", Expression: expression}}
}
