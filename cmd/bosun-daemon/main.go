// Command bosun-daemon is bosun's node agent.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/bosun-dev/bosun/pkg/daemon/app"
)

func main() {
	os.Exit(cli.Run(app.NewDaemonCommand()))
}
