// Command kube-proxy is upstream kube-proxy, built from the Go module proxy for the local
// cluster of the in-cluster install test: with it, pods reach the API server through the
// "kubernetes" Service and the API server reaches bosun's webhooks through theirs.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
