// Package deploymentutil holds the arithmetic and bookkeeping of bosun's Deployment
// controller: the rolling-update fenceposts (maxSurge / maxUnavailable), which ReplicaSet is
// the "new" one, revision and annotation handling, replica math (how far to scale the new
// ReplicaSet up and the old ones down, proportional scaling), the Deployment conditions and
// the status calculation, and the choice of old ReplicaSets that cleanup may delete.
//
// Everything here is pure: functions read Deployments and ReplicaSets (and, where a
// function says so, mutate the object handed to it) and return a decision. None of them
// talks to the API server, reads the clock or logs. Keeping the decisions apart from the
// controller's I/O lets the unit tests pin the compatibility-critical behaviour (the exact
// numbers a rollout produces, the annotation strings kubectl reads) with plain tables, and
// lets the controller stay a thin sequence of "compute, then write".
//
// Conventions: a nil ReplicaSet or a nil spec.replicas on a ReplicaSet counts as 0 replicas;
// a nil spec.replicas on a Deployment counts as 1, the API server's default. Functions that
// need the current time take it as an argument.
package deploymentutil
