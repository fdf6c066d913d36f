package cloneset

import (
	"testing"
)

// TestController runs the acceptance scenarios of the CloneSet controller that need no
// node, against one bosun-controller-manager (see startController) that they share: each
// runs in a namespace of its own, in parallel with the others, so that the suite takes
// about as long as its slowest scenarios rather than their sum. Run one with
// -run 'TestController/<name>'.
func TestController(t *testing.T) {
	parent := setup(t)
	manager := parent.startController(t)
	for _, scenario := range []struct {
		name string
		run  func(t *testing.T, e *testEnv)
	}{
		// scale_test.go
		{"ScaleSubresource", testScaleSubresource},
		{"CreateZeroToFive", testCreateZeroToFive},
		{"ScaleUpPacing", testScaleUpPacing},
		{"ScaleDownOrder", testScaleDownOrder},
		{"SpecifiedDelete", testSpecifiedDelete},
		{"Claims", testClaims},
		{"Orphans", testOrphans},
		// update_test.go
		{"RecreateRollout", testRecreateRollout},
		{"Surge", testSurge},
		{"Partition", testPartition},
		{"Paused", testPaused},
		{"OnDelete", testOnDelete},
		{"PriorityAndScatter", testPriorityAndScatter},
		// lifecycle_test.go
		{"PreNormalHook", testPreNormalHook},
		{"InPlaceUpdateHook", testInPlaceUpdateHook},
		{"PreDeleteHook", testPreDeleteHook},
		// revisions_test.go
		{"Revisions", testRevisions},
		{"Conversion", testConversion},
		// predownload_test.go
		{"PreDownload", testPreDownload},
	} {
		t.Run(scenario.name, func(t *testing.T) {
			t.Parallel()
			scenario.run(t, setupScenario(t, manager))
		})
	}
}
