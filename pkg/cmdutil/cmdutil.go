// Package cmdutil holds the small pieces both bosun binaries' commands share.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
)

// ErrInvalidFlags is what a command returns after PrintErrors reported its flag problems.
var ErrInvalidFlags = errors.New("invalid command-line flags")

// PrintErrors writes one line per error, unquoted, so that messages such as
// `"nosuch" is not in the list of known controllers` appear exactly as written (a log line
// would escape the quotes).
func PrintErrors(w io.Writer, err error) {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			fmt.Fprintf(w, "Error: %v\n", e)
		}
		return
	}
	fmt.Fprintf(w, "Error: %v\n", err)
}

// LogStartup logs the component's version and the Go runtime settings.
func LogStartup(ctx context.Context, component string) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "component", component, "version", version.Get().String())
	logger.Info("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", goruntime.GOMAXPROCS(0), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))
}
