// Command kube-scheduler is upstream kube-scheduler, built from the Go module proxy for
// bosun's local cluster and end-to-end tests.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
