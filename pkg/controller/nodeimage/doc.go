// Package nodeimage implements the manager side of apps.kruise.io NodeImages (on v1beta1,
// the stored version; both versions have one schema): one NodeImage per node, named
// after it, listing the images the node agent on that node is to pull. The agent
// (pkg/daemon/controller/nodeimage) pulls and writes the status; this controller keeps
// the object itself in order. Work is keyed by node name; informer handlers only enqueue,
// and sync does, for one node:
//
//  1. the node is gone or being deleted: its NodeImage is deleted, unless it carries the
//     apps.kruise.io/fake-nodeimage label (NodeImages made by hand for tests and tools);
//  2. the node has no NodeImage: an empty one with the node's labels is created once the
//     node's Ready condition has been True for the creation delay (30 s by default), so
//     that a node that flaps while joining does not get one; the node is looked at again
//     when the delay is over;
//  3. the spec is rewritten (read-modify-write, retried on conflicts) when it has to be:
//     labels equal to the node's; tags without createdAt dropped; ImagePullJob owner
//     references (of any apps.kruise.io version) whose job is gone, or is a new job under
//     the same name (matched by UID), dropped, and with them the tags no owner remains on
//     (owners of other kinds are kept as they are, and kept references keep their
//     version); tags whose current status completed more than ttlSecondsAfterFinished
//     ago dropped; pull-secret references whose Secret no longer exists dropped; images
//     left without tags dropped. A rewrite ends the sync: its own update event brings the
//     node back;
//  4. the status is brought in line: a tag the agent has not reported on (no status of the
//     tag's version) the response timeout (10 min by default) after its createdAt is
//     marked Failed "node has not responded for a long time", and a tag with
//     activeDeadlineSeconds still unfinished that long plus the response timeout after
//     createdAt is marked Failed "pulling exceeds the activeDeadlineSeconds"; each such
//     failure records a PullImageFailed warning on every owner of the tag and on the
//     NodeImage. Statuses of tags and images no longer in spec are dropped and the counts
//     recomputed (waiting is the agent's alone). The status is written only when it
//     changed;
//  5. the node is looked at again at the nearest of its timers (TTL expiries, response
//     timeouts, deadlines, the next check of its secret references), but never sooner than
//     3 to 5 s (random) so that busy nodes do not keep a worker spinning.
//
// What queues a node: its creation, deletion, or a change of its labels, deletion
// timestamp or Ready condition (heartbeats alone do not); any change of its NodeImage; the
// deletion of an ImagePullJob that owns a tag of the NodeImage.
//
// Choices of this implementation: an ImagePullJob or Secret the informer cache does not
// know is looked up on the API server before its reference is dropped, so a job created an
// instant ago is never mistaken for a gone one; Secrets are not cached at all (a manager
// caching every Secret of the cluster would hold all of its credentials) but read live, at
// most once a minute per NodeImage; the response timeout is configurable
// (--nodeimage-response-timeout) so that tests and benchmarks need not wait ten minutes.
package nodeimage
