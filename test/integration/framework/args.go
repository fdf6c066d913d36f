package framework

import "strings"

// mergeArgs returns the default flags with every flag that overrides also sets left
// out, followed by overrides. Callers can thus replace a default (say
// --authorization-mode) or add flags, and may repeat a flag in overrides.
func mergeArgs(defaults, overrides []string) []string {
	overridden := make(map[string]bool, len(overrides))
	for _, arg := range overrides {
		overridden[flagName(arg)] = true
	}
	merged := make([]string, 0, len(defaults)+len(overrides))
	for _, arg := range defaults {
		if !overridden[flagName(arg)] {
			merged = append(merged, arg)
		}
	}
	return append(merged, overrides...)
}

// flagName returns "name" for "--name=value", "-name=value" and "--name".
func flagName(arg string) string {
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	return name
}
