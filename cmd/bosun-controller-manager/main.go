// Command bosun-controller-manager runs bosun's workload controllers.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/bosun-dev/bosun/pkg/controllermanager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
