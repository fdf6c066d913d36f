// Copyright 2019 The Kubernetes Authors.
// SPDX-License-Identifier: Apache-2.0

package builtinpluginconsts

const (
	namePrefixFieldSpecs = `
namePrefix:
- path: metadata/name
`
)
