package dataplane

import "syscall"

// notDumpable makes the calling process non-dumpable (PR_SET_DUMPABLE 0).
// A writer holder keeps a pod's file volumes mounted read-write, and the
// writer it runs holds a payload of Secret values: with
// shareProcessNamespace a container of the pod sees their processes, and
// one running as root with Docker's default capabilities could otherwise
// reach the holder's mounts through /proc/PID/root and rewrite the files
// every container reads (or read the payload's memory). A non-dumpable
// process's /proc entries are open only to a caller with CAP_SYS_PTRACE,
// which no container gets without --allow-capabilities.
func notDumpable() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
