// Command kube-controller-manager is upstream kube-controller-manager, built from the Go
// module proxy so benchmarks can compare bosun with it on the same machine.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
