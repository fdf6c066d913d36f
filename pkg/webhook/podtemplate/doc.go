// Package podtemplate holds what the admission webhooks of workloads do to the pod
// templates they carry: the core defaults OpenKruise writes into a template (and into the
// claim templates beside it), and the checks of a template that bosun can make without
// core's full pod validation, which lives outside the modules bosun depends on. The API
// server still validates every pod and claim a controller creates from them.
//
// The defaults are OpenKruise's set, no more and no less: upstream's pod-spec, container,
// probe, handler and volume defaults, with imagePullPolicy Always for the containers (so
// that an in-place image update pulls the new image whatever its tag), the phase and the
// rounded quantities of claims. A defaulted template is hashed into its workload's revision
// name, which must stay the one OpenKruise computes for the same object, so that handing a
// workload from one to the other rolls no pod.
package podtemplate
