package holder

import (
	"encoding/binary"
	"fmt"
)

// arm64 system call numbers (include/uapi/asm-generic/unistd.h). Arguments
// go in x0–x3, the number in x8; `svc #0` returns the result in x0 (a
// negative errno on failure) and preserves every other register. arm64 has
// no pause(): rt_sigsuspend with an empty mask is the same sleep.
const (
	arm64RtSigsuspend  = 133
	arm64RtSigaction   = 134
	arm64RtSigprocmask = 135
	arm64RtSigreturn   = 139
	arm64ExitGroup     = 94
	arm64Wait4         = 260
)

// arm64Program is the holder for arm64, the same program as amd64Program
// (see there and the package documentation for why each step is needed).
// testdata/arm64.golden is its listing, checked against objdump and run
// under qemu-aarch64 when it was written (qemu_test.go).
func arm64Program() []insn {
	var p []insn
	add := func(in ...insn) { p = append(p, in...) }

	add(label("_start"),
		movz(8, arm64RtSigprocmask, "rt_sigprocmask("),
		movz(0, sigSetmask, "  SIG_SETMASK,"),
		adr(1, "nomask", "  &nomask (empty set),"),
		movz(2, 0, "  NULL (old mask not wanted),"),
		movz(3, sigsetSize, "  sizeof(sigset_t))"),
		a64("svc #0x0", "", 0xd4000001),
		cbnz0("fail", "0 on success, else exit 1"))
	add(installARM64(sigTERM, "SIGTERM", "act_exit")...)
	add(installARM64(sigINT, "SIGINT", "act_exit")...)
	add(installARM64(sigCHLD, "SIGCHLD", "act_reap")...)
	add(branch("bl", 0x94000000, "reap", "reap what already exited"))
	add(label("sleep"),
		movz(8, arm64RtSigsuspend, "rt_sigsuspend("),
		adr(0, "nomask", "  &nomask,"),
		movz(1, sigsetSize, "  sizeof(sigset_t)): sleep until a signal is handled"),
		a64("svc #0x0", "", 0xd4000001),
		branch("b", 0x14000000, "sleep", "and again"))

	add(label("fail"),
		movz(0, 1, "status 1: the set-up failed"),
		branch("b", 0x14000000, "exit", ""))
	add(label("on_exit"),
		movz(0, 0, "status 0: asked to stop"))
	add(label("exit"),
		movz(8, arm64ExitGroup, "exit_group(status)"),
		a64("svc #0x0", "does not return", 0xd4000001))

	// wait4 returns a reaped child's pid, 0 when none has ended, -ECHILD
	// when there is none: loop while it reaps. x30 holds the restorer
	// (SA_RESTORER), or _start's return address.
	add(label("reap"),
		movz(8, arm64Wait4, "wait4("),
		a64("mov x0, #0xffffffffffffffff", "  -1 (any child),", 0x92800000), // movn x0, #0
		movz(1, 0, "  NULL (status not wanted),"),
		movz(2, wNOHANG, "  WNOHANG,"),
		movz(3, 0, "  NULL (no rusage))"),
		a64("svc #0x0", "", 0xd4000001),
		a64("cmp x0, #0x0", "", 0xf100001f), // subs xzr, x0, #0
		bcond("b.gt", 0xc, "reap", "reaped one: try for another"),
		a64("ret", "to the restorer, or to _start", 0xd65f03c0))

	add(label("restorer"),
		movz(8, arm64RtSigreturn, "rt_sigreturn()"),
		a64("svc #0x0", "does not return", 0xd4000001))

	add(alignTo(8))
	add(sigaction("act_exit", "on_exit", saRESTORER, "exit at once")...)
	add(sigaction("act_reap", "reap", saRESTORER|saNOCLDSTOP, "reap exited children")...)
	add(label("nomask"), quad("", 0, "the empty signal set"))
	return p
}

// installARM64 is rt_sigaction(sig, &act, NULL, 8), exiting 1 on failure.
func installARM64(sig int, name, act string) []insn {
	return []insn{
		movz(8, arm64RtSigaction, "rt_sigaction("),
		movz(0, uint16(sig), "  "+name+","),
		adr(1, act, "  &"+act+","),
		movz(2, 0, "  NULL (old action not wanted),"),
		movz(3, sigsetSize, "  sizeof(sigset_t))"),
		a64("svc #0x0", "", 0xd4000001),
		cbnz0("fail", ""),
	}
}

// a64 is one fixed 32-bit instruction word.
func a64(text, why string, word uint32) insn {
	return insn{text: text, why: why, size: 4, encode: func(uint64, func(string) uint64) ([]byte, error) {
		return binary.LittleEndian.AppendUint32(nil, word), nil
	}}
}

// movz is `mov xd, #imm16` (MOVZ, 64-bit, shift 0): 1 10 100101 00 imm16 Rd.
func movz(rd int, imm uint16, why string) insn {
	return a64(fmt.Sprintf("mov x%d, #%#x", rd, imm), why, 0xd2800000|uint32(imm)<<5|uint32(rd))
}

// pcRel computes target's word offset from pc for a field of bits bits.
func pcRel(pc, target uint64, bits uint) (uint32, error) {
	d := int64(target) - int64(pc)
	if d%4 != 0 {
		return 0, fmt.Errorf("target %#x not word-aligned", target)
	}
	d /= 4
	if lim := int64(1) << (bits - 1); d < -lim || d >= lim {
		return 0, fmt.Errorf("offset of %d words does not fit %d bits", d, bits)
	}
	return uint32(d) & (1<<bits - 1), nil
}

// adr is `adr xd, target`: 0 immlo 10000 immhi Rd, a byte offset of ±1 MiB.
func adr(rd int, target, why string) insn {
	return insn{text: fmt.Sprintf("adr x%d, %s", rd, target), why: why, size: 4,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			d := int64(sym(target)) - int64(pc)
			if d < -(1<<20) || d >= 1<<20 {
				return nil, fmt.Errorf("adr offset %d out of range", d)
			}
			imm := uint32(d) & (1<<21 - 1)
			w := 0x10000000 | (imm&3)<<29 | (imm>>2)<<5 | uint32(rd)
			return binary.LittleEndian.AppendUint32(nil, w), nil
		}}
}

// cbnz0 is `cbnz x0, target`: 1 011010 1 imm19 Rt.
func cbnz0(target, why string) insn {
	return insn{text: "cbnz x0, " + target, why: why, size: 4,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			imm, err := pcRel(pc, sym(target), 19)
			return binary.LittleEndian.AppendUint32(nil, 0xb5000000|imm<<5), err
		}}
}

// bcond is `b.<cond> target`: 0101010 0 imm19 0 cond.
func bcond(text string, cond uint32, target, why string) insn {
	return insn{text: text + " " + target, why: why, size: 4,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			imm, err := pcRel(pc, sym(target), 19)
			return binary.LittleEndian.AppendUint32(nil, 0x54000000|imm<<5|cond), err
		}}
}

// branch is `b` (0x14000000) or `bl` (0x94000000) with an imm26 word offset.
func branch(text string, op uint32, target, why string) insn {
	return insn{text: text + " " + target, why: why, size: 4,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			imm, err := pcRel(pc, sym(target), 26)
			return binary.LittleEndian.AppendUint32(nil, op|imm), err
		}}
}
