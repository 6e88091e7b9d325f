package dataplane

import "syscall"

// notDumpable makes the calling process non-dumpable (PR_SET_DUMPABLE 0).
// With shareProcessNamespace a container of the pod sees the holder's
// process, and one running as root with Docker's default capabilities
// could otherwise reach the holder's mounts through /proc/PID/root. A
// non-dumpable process's /proc entries are open only to a caller with
// CAP_SYS_PTRACE, which no container gets without --allow-capabilities.
// A Go program is dumpable until its runtime has started, so a process
// that holds a pod's volumes writable never runs in the pod's namespaces
// at all (the files writer has a container of its own); this is defence
// in depth for the holder and for the writer's payload of Secret values.
func notDumpable() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
