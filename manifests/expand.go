package manifests

import "strings"

// ExpandVars expands $(NAME) in s with the value lookup gives, as
// Kubernetes expands env values, command and args: "$$" is a literal "$"
// (so "$$(NAME)" stays "$(NAME)"), a reference to a name lookup does not
// know stays as written, and so does an unterminated "$(".
func ExpandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	checkpoint := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:i])
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				break
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
		checkpoint = i + 1
	}
	b.WriteString(s[checkpoint:])
	return b.String()
}
