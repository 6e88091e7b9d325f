package holder

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// base is the virtual address the file is mapped at: a fixed, non-PIE
// executable (ET_EXEC), so that the sigaction structures can hold absolute
// addresses. 4 MiB is far above vm.mmap_min_addr and aligned for 64 KiB
// pages too.
const base = 0x400000

// Header sizes: one ELF64 header, then two program headers (the code
// segment and PT_GNU_STACK). The program starts right after them.
const (
	ehdrSize  = 64
	phdrSize  = 56
	phdrCount = 2
	codeStart = ehdrSize + phdrCount*phdrSize
)

// insn is one element of a program: an instruction, a label or data.
type insn struct {
	label string // the symbol this element defines at its address ("" none)
	text  string // the instruction as a disassembler prints it
	why   string // why it is there
	size  int    // bytes; fixed before encoding, so labels resolve in one pass
	align int    // >0: padding up to this alignment instead of an instruction
	// encode returns the element's bytes, given its own address and the
	// addresses of every label. It fails only when an operand does not fit
	// its field, which the tests would catch for these fixed programs.
	encode func(pc uint64, sym func(string) uint64) ([]byte, error)
}

// label defines a symbol at the current address.
func label(name string) insn { return insn{label: name} }

// alignTo pads with zero bytes up to a multiple of n. Only used between the
// code and the data, so the padding is never executed.
func alignTo(n int) insn { return insn{align: n, text: fmt.Sprintf(".align %d", n)} }

// quad is a 64-bit little-endian datum: a constant, or a label's address
// when target is not "".
func quad(target string, value uint64, why string) insn {
	text := fmt.Sprintf(".quad %#x", value)
	if target != "" {
		text = ".quad " + target
	}
	return insn{text: text, why: why, size: 8, encode: func(_ uint64, sym func(string) uint64) ([]byte, error) {
		v := value
		if target != "" {
			v = sym(target)
		}
		return binary.LittleEndian.AppendUint64(nil, v), nil
	}}
}

// arch is one target: its ELF machine, its page size and its program.
type arch struct {
	machine elf.Machine
	// align is the segment alignment: the largest page size the
	// architecture's kernels use (arm64 kernels may use 64 KiB pages).
	align   uint64
	program func() []insn
}

var arches = map[string]arch{
	"amd64": {machine: elf.EM_X86_64, align: 0x1000, program: amd64Program},
	"arm64": {machine: elf.EM_AARCH64, align: 0x10000, program: arm64Program},
}

// assembled is a linked program: the file's bytes and its listing.
type assembled struct {
	file    []byte
	listing string
}

// assemble lays the program out after the headers, resolves labels,
// encodes every element and writes the ELF headers in front.
func assemble(goarch string, a arch) (assembled, error) {
	prog := a.program()
	// Pass 1: addresses.
	addrs := make([]uint64, len(prog))
	syms := map[string]uint64{}
	pc := uint64(base + codeStart)
	for i, in := range prog {
		if in.align > 0 {
			pad := (uint64(in.align) - pc%uint64(in.align)) % uint64(in.align)
			prog[i].size = int(pad)
		}
		addrs[i] = pc
		if in.label != "" {
			if _, dup := syms[in.label]; dup {
				return assembled{}, fmt.Errorf("holder %s: label %q defined twice", goarch, in.label)
			}
			syms[in.label] = pc
		}
		pc += uint64(prog[i].size)
	}
	var missing []string
	sym := func(name string) uint64 {
		v, ok := syms[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	}
	// Pass 2: bytes and listing.
	var code bytes.Buffer
	var list strings.Builder
	for i, in := range prog {
		var b []byte
		switch {
		case in.align > 0:
			b = make([]byte, in.size)
		case in.encode != nil:
			var err error
			if b, err = in.encode(addrs[i], sym); err != nil {
				return assembled{}, fmt.Errorf("holder %s: %s: %w", goarch, in.text, err)
			}
		}
		if len(b) != in.size {
			return assembled{}, fmt.Errorf("holder %s: %s: encoded %d bytes, declared %d", goarch, in.text, len(b), in.size)
		}
		code.Write(b)
		if in.label != "" {
			fmt.Fprintf(&list, "%s:\n", in.label)
		}
		if in.text != "" && (in.align == 0 || in.size > 0) {
			line := fmt.Sprintf("  %08x  %-24s %-26s", addrs[i], hexBytes(b), in.text)
			if in.why != "" {
				line += " ; " + in.why
			}
			list.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	if len(missing) > 0 {
		return assembled{}, fmt.Errorf("holder %s: undefined labels %v", goarch, missing)
	}
	entry, ok := syms["_start"]
	if !ok || entry != base+codeStart {
		return assembled{}, fmt.Errorf("holder %s: the program must begin with the label _start", goarch)
	}

	size := uint64(codeStart + code.Len())
	var file bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(a.machine), Version: uint32(elf.EV_CURRENT),
		Entry: entry, Phoff: ehdrSize, Ehsize: ehdrSize, Phentsize: phdrSize, Phnum: phdrCount,
		Shentsize: 64, // no section headers (Shnum 0): nothing but the loader reads this file
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	phdrs := []elf.Prog64{
		// The whole file, headers included, read+execute at base.
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Off: 0, Vaddr: base, Paddr: base,
			Filesz: size, Memsz: size, Align: a.align},
		// A stack that is not executable, whatever the kernel's default.
		{Type: uint32(elf.PT_GNU_STACK), Flags: uint32(elf.PF_R | elf.PF_W), Align: 16},
	}
	if err := binary.Write(&file, binary.LittleEndian, hdr); err != nil {
		return assembled{}, err
	}
	if err := binary.Write(&file, binary.LittleEndian, phdrs); err != nil {
		return assembled{}, err
	}
	if file.Len() != codeStart {
		return assembled{}, fmt.Errorf("holder %s: headers are %d bytes, want %d", goarch, file.Len(), codeStart)
	}
	file.Write(code.Bytes())

	var out strings.Builder
	fmt.Fprintf(&out, "; holder for linux/%s: %d bytes, sha256 %x\n", goarch, file.Len(), sha256.Sum256(file.Bytes()))
	fmt.Fprintf(&out, "; ELF64 %s executable, entry %#x, one PT_LOAD (R+X, file offset 0 at %#x, align %#x), PT_GNU_STACK (RW)\n",
		a.machine, entry, base, a.align)
	out.WriteString(list.String())
	return assembled{file: file.Bytes(), listing: out.String()}, nil
}

func hexBytes(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%02x", c)
	}
	return s.String()
}
