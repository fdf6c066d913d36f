//go:build linux

// Command pause is bosun's pod-sandbox "pause" binary: the first process of
// every pod, which holds the pod's namespaces open and does nothing else.
//
// Running as PID 1 of the pod's PID namespace (when the namespace is shared), it
// has two duties a plain sleep would miss: the kernel applies no default action
// to SIGTERM or SIGINT for PID 1, so it must exit on them itself, and orphaned
// processes are re-parented to it, so it must reap them or they stay zombies.
package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGCHLD is only a hint that some children exited (several exits may be
	// merged into one signal), so each one triggers a full reap.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)

	// Children may have exited before Notify took effect; collect them now.
	reapChildren(syscall.Wait4)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reapChildren(syscall.Wait4)
			continue
		}
		os.Exit(0)
	}
}

// wait4Func has the signature of syscall.Wait4, so tests can stand in for it.
type wait4Func func(pid int, status *syscall.WaitStatus, options int, rusage *syscall.Rusage) (int, error)

// reapChildren collects every child that has already exited, without blocking,
// and returns how many it collected.
func reapChildren(wait4 wait4Func) int {
	reaped := 0
	for {
		var status syscall.WaitStatus
		pid, err := wait4(-1, &status, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		// An error (ECHILD: no children at all) or pid 0 (children remain, but
		// none has exited yet) both mean there is nothing left to reap now.
		if err != nil || pid <= 0 {
			return reaped
		}
		reaped++
	}
}
