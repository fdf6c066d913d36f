package crifake

// containerState holds the fake runtime's pod sandboxes and containers.
type containerState struct{}
