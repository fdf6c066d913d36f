//go:build !linux

package framework

import "syscall"

// childProcAttr puts a child in its own process group, so that it and everything it
// starts can be killed together. Only Linux can also tie the child's life to the test
// binary's; elsewhere a crashed test binary may leave its children running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
