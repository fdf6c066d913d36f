// Command kube-apiserver is upstream kube-apiserver, built from the Go module proxy for
// bosun's tests and local cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
