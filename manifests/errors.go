package manifests

import (
	"strconv"
	"strings"
)

// FieldError is one problem in one document, located by file, line and
// field path (Kubernetes notation: spec.template.spec.containers[0].image,
// map keys as metadata.labels[app]). Line is 0 when unknown, for example for
// a Deployment that was built in code rather than decoded.
type FieldError struct {
	File string
	Line int
	Path string
	Msg  string
}

// Error renders "file:line: path: message", leaving out the parts that are
// unknown so that the line still reads naturally.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found, one per line in Error(). It is returned
// as an error only when non-empty (see ErrorList.Err), because a nil
// ErrorList stored in an error interface would not compare equal to nil.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns l as an error, or a true nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
