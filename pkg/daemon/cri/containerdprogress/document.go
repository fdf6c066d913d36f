package containerdprogress

import (
	"encoding/json"
	"strings"
)

// document is what the tracker reads of an OCI or Docker manifest or index.
type document struct {
	Config    *descriptor  `json:"config"`
	Layers    []descriptor `json:"layers"`
	Manifests []descriptor `json:"manifests"`
}

type descriptor struct {
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Platform  *platform `json:"platform,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

// parseDocument returns data as a manifest or index, or nil when it is neither (an image
// config, for one, is JSON too).
func parseDocument(data []byte) *document {
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil
	}
	if !doc.isManifest() && !doc.isIndex() {
		return nil
	}
	return &doc
}

// isManifest: a manifest names its config blob. An image config has a "config" object
// too, without a digest.
func (d *document) isManifest() bool { return d.Config != nil && d.Config.Digest != "" }

func (d *document) isIndex() bool { return !d.isManifest() && len(d.Manifests) > 0 }

// blobs are the config and layers of a manifest that containerd fetches.
func (d *document) blobs() []descriptor {
	var blobs []descriptor
	for _, blob := range append([]descriptor{*d.Config}, d.Layers...) {
		if blob.Size > 0 && !blob.nonDistributable() {
			blobs = append(blobs, blob)
		}
	}
	return blobs
}

// nonDistributable tells the layers registries do not serve, which containerd does not
// fetch.
func (d descriptor) nonDistributable() bool {
	return strings.Contains(d.MediaType, "nondistributable") || strings.Contains(d.MediaType, "foreign")
}
