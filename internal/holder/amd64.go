package holder

import (
	"encoding/binary"
	"fmt"
)

// x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
// Arguments go in rdi, rsi, rdx, r10; the number in eax; the result comes
// back in rax (a negative errno on failure). syscall clobbers rcx and r11
// only.
const (
	amd64RtSigaction   = 13
	amd64RtSigprocmask = 14
	amd64RtSigreturn   = 15
	amd64Pause         = 34
	amd64Wait4         = 61
	amd64ExitGroup     = 231
)

// amd64Program is the holder for x86-64. Every instruction is encoded by
// hand; testdata/amd64.golden is its listing, checked against objdump when
// it was written.
func amd64Program() []insn {
	var p []insn
	add := func(in ...insn) { p = append(p, in...) }

	add(label("_start"))
	// 1. A parent may have blocked signals and exec keeps the mask:
	//    unblock all, or SIGTERM could wait forever.
	add(movImm32("eax", amd64RtSigprocmask, "rt_sigprocmask("),
		movImm32("edi", sigSetmask, "  SIG_SETMASK,"),
		leaRSI("nomask", "  &nomask (empty set),"),
		x86("xor edx, edx", "  NULL (old mask not wanted),", 0x31, 0xd2),
		movImm32("r10d", sigsetSize, "  sizeof(sigset_t))"),
		x86("syscall", "", 0x0f, 0x05),
		x86("test rax, rax", "0 on success", 0x48, 0x85, 0xc0),
		jcc8("jne", 0x75, "fail", "else exit 1"))
	// 2. Handlers. PID 1 of a namespace ignores signals left at their
	//    default, so SIGTERM and SIGINT need one to end the holder.
	add(installAMD64(sigTERM, "SIGTERM", "act_exit")...)
	add(installAMD64(sigINT, "SIGINT", "act_exit")...)
	add(installAMD64(sigCHLD, "SIGCHLD", "act_reap")...)
	// 3. Children that ended before the SIGCHLD handler was there sent
	//    their signal to nobody: reap them now.
	add(call32("reap", "reap what already exited"))
	// 4. Sleep; every signal interrupts pause, its handler runs, and the
	//    loop sleeps again (or the handler has exited).
	add(label("sleep"),
		movImm32("eax", amd64Pause, "pause(): sleep until a signal is handled"),
		x86("syscall", "", 0x0f, 0x05),
		jmp8("sleep", "and again"))

	add(label("fail"),
		movImm32("edi", 1, "status 1: the set-up failed"),
		jmp8("exit", ""))
	// The SIGTERM/SIGINT handler.
	add(label("on_exit"),
		x86("xor edi, edi", "status 0: asked to stop", 0x31, 0xff))
	add(label("exit"),
		movImm32("eax", amd64ExitGroup, "exit_group(status)"),
		x86("syscall", "does not return", 0x0f, 0x05))

	// The SIGCHLD handler, also called once at start. wait4 returns the
	// pid of a child it reaped, 0 when children remain but none has ended,
	// -ECHILD when there is none: loop while it reaps. Registers need not
	// be saved: rt_sigreturn restores the interrupted context.
	add(label("reap"),
		movImm32("eax", amd64Wait4, "wait4("),
		movImm32("edi", 0xffffffff, "  -1 (any child),"),
		x86("xor esi, esi", "  NULL (status not wanted),", 0x31, 0xf6),
		movImm32("edx", wNOHANG, "  WNOHANG,"),
		x86("xor r10d, r10d", "  NULL (no rusage))", 0x45, 0x31, 0xd2),
		x86("syscall", "", 0x0f, 0x05),
		x86("test rax, rax", "", 0x48, 0x85, 0xc0),
		jcc8("jg", 0x7f, "reap", "reaped one: try for another"),
		x86("ret", "to the restorer (the kernel pushed it), or to _start", 0xc3))

	// A handler returns here: the kernel restores the interrupted context.
	add(label("restorer"),
		movImm32("eax", amd64RtSigreturn, "rt_sigreturn()"),
		x86("syscall", "does not return", 0x0f, 0x05))

	add(alignTo(8))
	add(sigaction("act_exit", "on_exit", saRESTORER, "exit at once")...)
	add(sigaction("act_reap", "reap", saRESTORER|saNOCLDSTOP, "reap exited children")...)
	add(label("nomask"), quad("", 0, "the empty signal set"))
	return p
}

// installAMD64 is rt_sigaction(sig, &act, NULL, 8), exiting 1 on failure.
func installAMD64(sig int, name, act string) []insn {
	return []insn{
		movImm32("eax", amd64RtSigaction, "rt_sigaction("),
		movImm32("edi", uint32(sig), "  "+name+","),
		leaRSI(act, "  &"+act+","),
		x86("xor edx, edx", "  NULL (old action not wanted),", 0x31, 0xd2),
		movImm32("r10d", sigsetSize, "  sizeof(sigset_t))"),
		x86("syscall", "", 0x0f, 0x05),
		x86("test rax, rax", "", 0x48, 0x85, 0xc0),
		jcc8("jne", 0x75, "fail", ""),
	}
}

// x86 is an instruction of fixed bytes.
func x86(text, why string, b ...byte) insn {
	return insn{text: text, why: why, size: len(b), encode: func(uint64, func(string) uint64) ([]byte, error) { return b, nil }}
}

// x86Regs32 numbers the 32-bit registers movImm32 uses; r8d–r15d take a
// REX.B prefix.
var x86Regs32 = map[string]byte{
	"eax": 0, "ecx": 1, "edx": 2, "ebx": 3, "esi": 6, "edi": 7,
	"r8d": 8, "r9d": 9, "r10d": 10,
}

// movImm32 is `mov r32, imm32` (B8+r id). Writing a 32-bit register
// zeroes the upper half, so it sets the whole 64-bit register; 0xffffffff
// in edi is the int -1 wait4 reads.
func movImm32(reg string, v uint32, why string) insn {
	r, ok := x86Regs32[reg]
	if !ok {
		panic("movImm32: unknown register " + reg)
	}
	var b []byte
	if r >= 8 {
		b = append(b, 0x41) // REX.B
	}
	b = append(b, 0xb8+(r&7))
	b = binary.LittleEndian.AppendUint32(b, v)
	return x86(fmt.Sprintf("mov %s, %#x", reg, v), why, b...)
}

// rel32 encodes target's displacement from the end of an instruction that
// starts at pc and is size bytes long.
func rel32(pc uint64, size int, target uint64) ([]byte, error) {
	d := int64(target) - int64(pc) - int64(size)
	if d != int64(int32(d)) {
		return nil, fmt.Errorf("displacement %d out of range", d)
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(int32(d))), nil
}

// leaRSI is `lea rsi, [rip+disp32]` (REX.W 8D /r, ModRM 00 110 101).
func leaRSI(target, why string) insn {
	return insn{text: "lea rsi, [rip+" + target + "]", why: why, size: 7,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			d, err := rel32(pc, 7, sym(target))
			return append([]byte{0x48, 0x8d, 0x35}, d...), err
		}}
}

// call32 is `call rel32` (E8 cd).
func call32(target, why string) insn {
	return insn{text: "call " + target, why: why, size: 5,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			d, err := rel32(pc, 5, sym(target))
			return append([]byte{0xe8}, d...), err
		}}
}

// jcc8 is a short jump: opcode (75 jne, 7f jg, eb jmp) and an 8-bit
// displacement from the end of the instruction.
func jcc8(mnemonic string, opcode byte, target, why string) insn {
	return insn{text: mnemonic + " " + target, why: why, size: 2,
		encode: func(pc uint64, sym func(string) uint64) ([]byte, error) {
			d := int64(sym(target)) - int64(pc) - 2
			if d != int64(int8(d)) {
				return nil, fmt.Errorf("short jump of %d bytes", d)
			}
			return []byte{opcode, byte(int8(d))}, nil
		}}
}

func jmp8(target, why string) insn { return jcc8("jmp", 0xeb, target, why) }
