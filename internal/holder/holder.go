package holder

import (
	"fmt"
	"sort"
	"strings"
)

// Linux ABI values shared by every architecture (include/uapi).
const (
	sigINT  = 2
	sigTERM = 15
	sigCHLD = 17

	sigSetmask = 2 // rt_sigprocmask's how: replace the mask
	wNOHANG    = 1 // wait4: return 0 instead of blocking when no child has exited

	saNOCLDSTOP = 0x00000001 // SIGCHLD only for children that end, not those that stop
	// saRESTORER says the sigaction carries the address a handler returns
	// to, which must make the rt_sigreturn system call. x86-64 kernels
	// refuse to deliver a signal to a handler without one; on arm64 the
	// kernel would otherwise use its vDSO trampoline, which emulators do
	// not always map, so the program brings its own there too.
	saRESTORER = 0x04000000

	sigsetSize = 8 // the kernel's sigset_t: 64 signals
)

// Binary returns the holder executable for linux/goarch. The same goarch
// always gives the same bytes.
func Binary(goarch string) ([]byte, error) {
	a, ok := arches[goarch]
	if !ok {
		return nil, fmt.Errorf("no holder binary for linux/%s: dockctl can run pod holders on %s only", goarch, strings.Join(Arches(), ", "))
	}
	out, err := assemble(goarch, a)
	if err != nil {
		return nil, err
	}
	return out.file, nil
}

// Arches lists the architectures (GOARCH names) Binary supports, sorted.
func Arches() []string {
	var out []string
	for k := range arches {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listing returns the annotated disassembly of the holder for goarch: every
// instruction and datum with its address, bytes and purpose.
func listing(goarch string) (string, error) {
	a, ok := arches[goarch]
	if !ok {
		return "", fmt.Errorf("no holder binary for linux/%s", goarch)
	}
	out, err := assemble(goarch, a)
	if err != nil {
		return "", err
	}
	return out.listing, nil
}

// sigaction is the kernel's struct sigaction on amd64 and arm64 (which
// both define SA_RESTORER): handler, flags, restorer, mask, 8 bytes each.
// It lives in the read-only segment: the kernel only reads it.
func sigaction(name, handler string, flags uint64, why string) []insn {
	return []insn{
		label(name),
		quad(handler, 0, "sa_handler: "+why),
		quad("", flags, "sa_flags"),
		quad("restorer", 0, "sa_restorer: where the handler returns"),
		quad("", 0, "sa_mask: block nothing more while the handler runs"),
	}
}
