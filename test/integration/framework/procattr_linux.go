package framework

import "syscall"

// childProcAttr puts a child in its own process group, so that it and everything it
// starts can be killed together, and asks the kernel to SIGKILL it when the thread that
// started it dies: a panicking, timed-out or killed test binary must not leave servers
// behind holding ports and disk.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
