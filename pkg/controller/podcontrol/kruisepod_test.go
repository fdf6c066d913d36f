package podcontrol_test

import (
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// StatusUpdater is what the pod protocol's writers are given. The check sits in an external
// test package: kruisepod retries its writes through this package.
var (
	_ kruisepod.PodStatusUpdater = podcontrol.StatusUpdater{}
	_ kruisepod.PodUpdater       = podcontrol.StatusUpdater{}
)
