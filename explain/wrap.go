package explain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// wrap breaks s into lines of at most lim characters at spaces, keeping
// its own line breaks and the spaces that start a line, as the word
// wrapper of kubectl's explain templates does: a word that does not fit
// starts the next line (the spaces before it dropped), and a word longer
// than a line is left whole on a line of its own.
func wrap(s string, lim int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		cur := 0
		for line != "" {
			sp := spaceRun(line)
			line = line[len(sp):]
			word := line[:len(line)-len(strings.TrimLeftFunc(line, notSpace))]
			line = line[len(word):]
			ns, nw := utf8.RuneCountInString(sp), utf8.RuneCountInString(word)
			if word == "" {
				if cur+ns <= lim {
					b.WriteString(sp) // trailing spaces that fit
				}
				break
			}
			// The wrapper breaks as soon as the part of the word read so
			// far overflows the line while still shorter than a line.
			if cur+ns+min(nw, lim-1) > lim {
				b.WriteByte('\n')
				cur, sp, ns = 0, "", 0
			}
			b.WriteString(sp + word)
			cur += ns + nw
		}
	}
	return b.String()
}

// spaceRun is the run of spaces (any but a no-break space) s starts with.
func spaceRun(s string) string {
	return s[:len(s)-len(strings.TrimLeftFunc(s, func(r rune) bool { return !notSpace(r) }))]
}

func notSpace(r rune) bool { return !unicode.IsSpace(r) || r == '\u00a0' }
