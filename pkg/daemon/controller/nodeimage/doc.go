// Package nodeimage is the node side of NodeImage: the node agent's image puller. For the
// agent's own node's NodeImage it pulls the listed images and tags through the CRI and
// reports the pulls in the NodeImage's status.
//
// One sync, on spec changes and on its own timers:
//  1. Keep one pool per image of the spec (pools of removed images stop), with the image's
//     pull credentials, read by GET from the secrets namespace only and cached for a
//     minute, and its sandbox config.
//  2. A tag is done when its status answers the spec's version and has a completion time.
//     Workers of tags gone from spec, done, or of an older version stop; every tag still to
//     pull gets a worker.
//  3. Rebuild the whole status from the workers and the done statuses and write it, unless
//     it equals the last one written (rewritten every 12–13 h all the same), at most 0.5
//     writes per second. Look again in 3–5 s while a tag is unfinished, else in 20–30 min.
//
// A worker reports Waiting, takes a pull slot when the node limits parallel pulls, reports
// Pulling with its start time before it calls the runtime, then makes up to
// backoffLimit+1 attempts, each bounded by timeoutSeconds and by what is left of
// activeDeadlineSeconds, sleeping 1 s doubling to 30 s between them. An attempt of an
// IfNotPresent tag takes an image the runtime already lists as pulled; otherwise it calls
// PullImage with the credentials matching the image's registry, one after the other, and
// anonymously only when none match. Success records the image ID as "<name>@<id>" and a
// PullImageSucceed event on the NodeImage; final failure records the last error and a
// PullImageFailed event on the NodeImage and on each owner of the tag.
//
// It never writes the spec, and never pulls for another node. The CRI pull is one call that
// reports nothing until it returns; where the runtime is containerd, its content store shows
// the bytes pulled so far, which become the tag's progress while the pull runs (package
// containerdprogress). Other runtimes report 0, then 100.
package nodeimage
