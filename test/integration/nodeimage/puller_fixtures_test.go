package nodeimage

import (
	"testing"
	"time"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// startPullerNode makes a Node called short that has been Ready for an hour, runs the
// manager (which creates its NodeImage at once) and the node agent with agentArgs, and
// returns the Node's name and the agent's fake runtime once the NodeImage exists.
func (e *testEnv) startPullerNode(t *testing.T, short string, agentArgs ...string) (string, *crifake.Runtime) {
	t.Helper()
	node := e.createNode(t, short, nil, time.Now().Add(-time.Hour))
	e.startManager(t, managerOptions(creationDelayFlag+"=0s"))
	e.nodeImages().WaitFor(t, node, "created", func(*nodeImage) bool { return true })
	return node, e.startAgent(t, node, agentArgs...)
}
