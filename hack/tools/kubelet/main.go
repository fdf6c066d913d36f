// Command kubelet is upstream kubelet, built from the Go module proxy for the node of
// bosun's local cluster and end-to-end tests.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
