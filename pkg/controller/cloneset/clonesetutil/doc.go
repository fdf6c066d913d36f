// Package clonesetutil holds the pure CloneSet rules that the controller and the CloneSet
// webhooks share, so that both read a CloneSet the same way: its effective settings in
// v1beta1 (effective.go: whether pods held in PreparingDelete count, and the image
// pre-download settings, from the field or, for CloneSets written in v1alpha1, the label or
// annotation that carries it) and how an int-or-percent knob becomes a number of pods
// (scaled.go). It uses no client, no cache and no clock.
package clonesetutil
