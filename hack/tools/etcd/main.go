// Command etcd is upstream etcd, built from the Go module proxy for bosun's tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
