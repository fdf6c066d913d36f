package crifake

// imageState holds the fake runtime's images and the pulls it was asked for.
type imageState struct{}
