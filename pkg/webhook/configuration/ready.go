package configuration

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/server/healthz"
)

// ReadyCheckName is the name of the writer's readiness check.
const ReadyCheckName = "webhook-configuration"

// errNoCABundle is the outcome of a sync that could not write because the certificate
// provider knows no CA yet.
var errNoCABundle = errors.New("waiting for the CA bundle")

// syncOutcomes remembers how the last sync of each key ended.
type syncOutcomes struct {
	mu   sync.Mutex
	last map[string]error
}

func (o *syncOutcomes) record(key string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = map[string]error{}
	}
	o.last[key] = err
}

// problems lists, for each key, why its configuration is not known to be right.
func (o *syncOutcomes) problems(keys []string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, key := range keys {
		err, synced := o.last[key]
		switch {
		case !synced:
			out = append(out, key+": not written yet")
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", key, err))
		}
	}
	sort.Strings(out)
	return out
}

// ReadyCheck is the readiness check "webhook-configuration": it passes once the last sync
// of both configurations succeeded, that is once the API server has been told where the
// webhooks are and which CA to trust. Until then admission requests may not reach this
// replica, or be refused for an unknown certificate.
func (w *Writer) ReadyCheck() healthz.HealthChecker {
	keys := make([]string, 0, len(w.targets))
	for key := range w.targets {
		keys = append(keys, key)
	}
	return healthz.NamedCheck(ReadyCheckName, func(*http.Request) error {
		if problems := w.outcomes.problems(keys); len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
}
