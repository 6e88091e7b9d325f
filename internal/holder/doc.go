// Package holder generates the executable that a pod's holder container
// runs: a static Linux ELF of a few hundred bytes, hand-assembled here
// instruction by instruction, so that dockctl never needs a toolchain, a
// registry or a build to get it.
//
// Invariants:
//
//   - Binary is pure: the same GOARCH always yields the same bytes (the
//     listings in testdata are golden), so the image dockerx builds around
//     it has the same ID every time.
//   - The program only ever does four things, in this order: it unblocks
//     every signal; installs handlers for SIGTERM and SIGINT (exit_group(0)
//     at once) and SIGCHLD (reap every exited child); reaps children that
//     exited before the handler was there; then sleeps in a loop. Handlers
//     are required, not a nicety: the kernel ignores a signal whose
//     disposition is the default for PID 1 of a PID namespace, which the
//     holder is, so without a handler `docker stop` would wait out its
//     timeout and kill it. Reaping matters because, with
//     shareProcessNamespace, every orphan of the pod becomes the holder's
//     child; unreaped, they would stay zombies.
//   - If a system call of the set-up fails the program exits 1 rather than
//     run without its handlers, so that a broken holder is seen at once.
//   - The program has no writable memory: one read+execute segment holds
//     code and the constant sigaction structures; the stack is the only
//     data it touches, and that is not executable (PT_GNU_STACK).
package holder
