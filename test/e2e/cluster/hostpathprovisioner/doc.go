// Package hostpathprovisioner is the local cluster's dynamic volume provisioner: it gives
// every PersistentVolumeClaim of a StorageClass whose provisioner is ProvisionerName a
// directory on the node, as a hostPath PersistentVolume, so that workloads with volume
// claim templates (CloneSets, StatefulSets) start on the one real node as they do on a kind
// cluster with its local-path provisioner.
//
// The work is split with upstream kube-controller-manager's PersistentVolume controller,
// the way every external provisioner splits it:
//
//   - the scheduler picks the consumer's node and writes it on the claim
//     (volume.kubernetes.io/selected-node), the class binding on first consumer;
//   - the PersistentVolume controller then asks for a volume by naming the provisioner on
//     the claim (volume.kubernetes.io/storage-provisioner and its beta twin);
//   - this controller creates the directory (mode 0777, so that a container of any user
//     can write) and a PersistentVolume named after the claim's UID, pre-bound to the claim
//     (claimRef), holding the claim's request and access modes, the class, the class's
//     reclaim policy and mount options, node affinity to the selected node, and
//     pv.kubernetes.io/provisioned-by;
//   - the PersistentVolume controller binds the two; when the claim goes it marks the
//     volume Released and, because provisioned-by names an external provisioner, leaves
//     the deletion to this controller, which removes the directory and then the volume.
//
// Two queues, each with one sync: claims (syncClaim, provision.go) and volumes
// (syncVolume, reclaim.go). Both are level-driven: the volume's name comes from the
// claim's UID, so a repeated sync finds or re-creates the same volume in the same
// directory, and a Released volume is deleted whenever it is seen.
//
// It never provisions a claim without a selected node (the class binds on first consumer,
// and a volume must live on the node its pod runs on), in Block mode, with a selector or
// with a data source; those get a ProvisioningFailed event. It never deletes a directory
// that is not the one it would have made for the volume.
package hostpathprovisioner
