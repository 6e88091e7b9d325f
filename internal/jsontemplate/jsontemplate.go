// Package jsontemplate runs Go templates (text/template's syntax, parsed by
// text/template/parse, so the same grammar and parse errors) over data as
// encoding/json decodes it, without text/template's executor.
//
// Why: text/template's executor calls reflect.Value.MethodByName and Call;
// linking it turns off the Go linker's dead-method elimination for the whole
// binary (dockctl's grew by 6.7 MB, see cmd/dockctl/gotemplate.go).
//
// Invariants:
//   - Data is only what encoding/json decodes into an any: map[string]any,
//     []any, string, float64, bool and nil. Values a template makes are
//     those plus int (number constants, len, range indexes), uint8 (index
//     of a string) and complex128 (complex constants). Nothing has methods,
//     so no reflection over methods is ever needed and none is done.
//   - Execution follows text/template's with the default missingkey option:
//     a missing map key is text/template's invalid value and prints
//     "<no value>"; a JSON null is a nil interface until a pipeline ends,
//     where it too becomes the invalid value.
//   - Errors carry text/template's wording and location prefix
//     ("template: NAME:LINE:COL: executing ..."), a caller's function's
//     number and types of arguments checked as text/template checks a Go
//     function's (see Func).
//   - Functions are text/template's builtins that apply to JSON data plus
//     those the caller gives (Funcs); call always fails, as JSON holds no
//     functions.
package jsontemplate

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/template/parse"
	"unicode"
	"unicode/utf8"
)

// Param is the type of a caller's function's parameter, as text/template
// checks an argument against a Go function's parameter: Any is
// interface{} (the invalid value arrives as nil), String is string
// (anything else fails with text/template's "wrong type for value",
// "invalid value" or "expected string" errors).
type Param int

const (
	Any Param = iota
	String
)

// Func is a caller's template function, declared with its Go signature
// as text/template would see it: Params, the last of them repeated when
// Variadic (Go's ...T), so that a call is checked for its number of
// arguments and their types before Call runs, in text/template's words.
// Call gets the evaluated arguments (nil for text/template's invalid
// value) and returns a value of the package's data model.
type Func struct {
	Params   []Param
	Variadic bool
	Call     func(args []any) (any, error)
}

// Template is a parsed template and the templates it defines.
type Template struct {
	name  string
	trees map[string]*parse.Tree
	funcs map[string]Func
}

// builtinNames are text/template's builtins that this package evaluates.
var builtinNames = []string{"and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf", "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne"}

// Parse parses text as text/template's (*Template).Parse with the default
// delimiters would, knowing the builtins and funcs' names.
func Parse(name, text string, funcs map[string]Func) (*Template, error) {
	known := make(map[string]any, len(builtinNames)+len(funcs))
	for _, n := range builtinNames {
		known[n] = struct{}{}
	}
	for n := range funcs {
		known[n] = struct{}{}
	}
	trees, err := parse.Parse(name, text, "", "", known)
	if err != nil {
		return nil, err
	}
	return &Template{name: name, trees: trees, funcs: funcs}, nil
}

// Name is the template's name.
func (t *Template) Name() string { return t.name }

// Root is the main template's tree (its String is the template's text as
// text/template prints it).
func (t *Template) Root() *parse.ListNode {
	if tr := t.trees[t.name]; tr != nil {
		return tr.Root
	}
	return nil
}

// ExecError is an error while running a template.
type ExecError struct {
	Name string
	Err  error
}

func (e ExecError) Error() string { return e.Err.Error() }
func (e ExecError) Unwrap() error { return e.Err }

// maxExecDepth is text/template's limit on nested template invocations.
const maxExecDepth = 100000

// Execute runs the template over data (a value of the package's data
// model) and writes its output to w.
func (t *Template) Execute(w io.Writer, data any) (err error) {
	tr := t.trees[t.name]
	s := &state{t: t, tree: tr, w: w, vars: []variable{{"$", val{v: data, ok: data != nil}}}}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(ExecError); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	if tr == nil || tr.Root == nil {
		s.errorf("%q is an incomplete or empty template", t.name)
	}
	s.walk(val{v: data, ok: data != nil}, tr.Root)
	return nil
}

// val is a value as text/template's reflect.Value holds it: ok false is the
// invalid value; boxed is a value still in an interface{} (a map entry or
// slice element no pipeline has yet unwrapped), whose nil is not invalid
// and whose type errors name "interface {}".
type val struct {
	v     any
	ok    bool
	boxed bool
}

var invalid = val{}

// unbox is what text/template does at the end of each command of a
// pipeline: a value in an interface{} is taken out of it.
func (v val) unbox() val {
	if v.boxed {
		return val{v: v.v, ok: v.v != nil}
	}
	return v
}

func boxed(x any) val { return val{v: x, ok: true, boxed: true} }
func plain(x any) val { return val{v: x, ok: true} }

// typeName is the value's type as text/template's errors print it.
func (v val) typeName() string {
	if v.boxed {
		return "interface {}"
	}
	return typeOf(v.v)
}

func typeOf(x any) string {
	switch x.(type) {
	case map[string]any:
		return "map[string]interface {}"
	case []any:
		return "[]interface {}"
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", x)
}

type variable struct {
	name  string
	value val
}

type state struct {
	t     *Template
	tree  *parse.Tree
	w     io.Writer
	node  parse.Node
	vars  []variable
	depth int
}

func (s *state) at(n parse.Node) { s.node = n }

func (s *state) errorf(format string, args ...any) {
	name := strings.ReplaceAll(s.tree.Name, "%", "%%")
	if s.node == nil {
		format = fmt.Sprintf("template: %s: %s", name, format)
	} else {
		location, context := s.tree.ErrorContext(s.node)
		format = fmt.Sprintf("template: %s: executing %q at <%s>: %s", location, name, strings.ReplaceAll(context, "%", "%%"), format)
	}
	panic(ExecError{Name: s.tree.Name, Err: fmt.Errorf(format, args...)})
}

func (s *state) mark() int { return len(s.vars) }
func (s *state) pop(m int) { s.vars = s.vars[:m] }
func (s *state) push(name string, v val) {
	s.vars = append(s.vars, variable{name, v})
}

func (s *state) setVar(name string, v val) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = v
			return
		}
	}
	s.errorf("undefined variable: %s", name)
}

func (s *state) varValue(name string) val {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value
		}
	}
	s.errorf("undefined variable: %s", name)
	return invalid
}

// control is how a walk ends: normally, or by {{break}} or {{continue}}.
type control int

const (
	ctlNone control = iota
	ctlBreak
	ctlContinue
)

func (s *state) walk(dot val, node parse.Node) control {
	s.at(node)
	switch n := node.(type) {
	case *parse.ActionNode:
		v := s.evalPipeline(dot, n.Pipe)
		if len(n.Pipe.Decl) == 0 {
			s.printValue(n, v)
		}
	case *parse.BreakNode:
		return ctlBreak
	case *parse.ContinueNode:
		return ctlContinue
	case *parse.CommentNode:
	case *parse.IfNode:
		return s.walkIfOrWith(parse.NodeIf, dot, n.Pipe, n.List, n.ElseList)
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if ctl := s.walk(dot, c); ctl != ctlNone {
				return ctl
			}
		}
	case *parse.RangeNode:
		s.walkRange(dot, n)
	case *parse.TemplateNode:
		s.walkTemplate(dot, n)
	case *parse.TextNode:
		if _, err := s.w.Write(n.Text); err != nil {
			s.errorf("%w", err)
		}
	case *parse.WithNode:
		return s.walkIfOrWith(parse.NodeWith, dot, n.Pipe, n.List, n.ElseList)
	default:
		s.errorf("unknown node: %s", node)
	}
	return ctlNone
}

func (s *state) walkIfOrWith(typ parse.NodeType, dot val, pipe *parse.PipeNode, list, elseList *parse.ListNode) control {
	defer s.pop(s.mark())
	v := s.evalPipeline(dot, pipe)
	if truth(v) {
		if typ == parse.NodeWith {
			return s.walk(v, list)
		}
		return s.walk(dot, list)
	} else if elseList != nil {
		return s.walk(dot, elseList)
	}
	return ctlNone
}

func (s *state) walkRange(dot val, r *parse.RangeNode) {
	s.at(r)
	defer s.pop(s.mark())
	v := s.evalPipeline(dot, r.Pipe)
	mark := s.mark()
	// oneIteration reports whether the range goes on.
	oneIteration := func(index, elem val) bool {
		if len(r.Pipe.Decl) > 0 {
			if r.Pipe.IsAssign {
				if len(r.Pipe.Decl) > 1 {
					s.setVar(r.Pipe.Decl[0].Ident[0], index)
				} else {
					s.setVar(r.Pipe.Decl[0].Ident[0], elem)
				}
			} else {
				s.vars[len(s.vars)-1].value = elem
			}
		}
		if len(r.Pipe.Decl) > 1 {
			if r.Pipe.IsAssign {
				s.setVar(r.Pipe.Decl[1].Ident[0], elem)
			} else {
				s.vars[len(s.vars)-1].value = elem
				s.vars[len(s.vars)-2].value = index
			}
		}
		ctl := s.walk(elem, r.List)
		s.pop(mark)
		return ctl != ctlBreak
	}
	switch x := v.v; x := x.(type) {
	case []any:
		if len(x) > 0 {
			for i, e := range x {
				if !oneIteration(plain(i), boxed(e)) {
					break
				}
			}
			return
		}
	case map[string]any:
		if len(x) > 0 {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !oneIteration(plain(k), boxed(x[k])) {
					break
				}
			}
			return
		}
	case int:
		if len(r.Pipe.Decl) > 1 {
			s.errorf("can't use %v to iterate over more than one variable", x)
		}
		if x > 0 {
			for i := 0; i < x; i++ {
				if !oneIteration(plain(i), plain(i)) {
					break
				}
			}
			return
		}
	case uint8:
		if len(r.Pipe.Decl) > 1 {
			s.errorf("can't use %v to iterate over more than one variable", x)
		}
		if x > 0 {
			for i := uint8(0); i < x; i++ {
				if !oneIteration(plain(i), plain(i)) {
					break
				}
			}
			return
		}
	case nil:
		// An invalid value: not an error, as text/template.
	default:
		s.errorf("range can't iterate over %v", x)
	}
	if r.ElseList != nil {
		s.walk(dot, r.ElseList)
	}
}

func (s *state) walkTemplate(dot val, t *parse.TemplateNode) {
	s.at(t)
	tr := s.t.trees[t.Name]
	if tr == nil {
		s.errorf("template %q not defined", t.Name)
	}
	if s.depth == maxExecDepth {
		s.errorf("exceeded maximum template depth (%v)", maxExecDepth)
	}
	dot = s.evalPipeline(dot, t.Pipe)
	ns := *s
	ns.depth++
	ns.tree = tr
	ns.vars = []variable{{"$", dot}}
	ns.walk(dot, tr.Root)
}

func (s *state) evalPipeline(dot val, pipe *parse.PipeNode) val {
	if pipe == nil {
		return invalid
	}
	s.at(pipe)
	v, final := invalid, false
	for _, cmd := range pipe.Cmds {
		v = s.evalCommand(dot, cmd, v, final).unbox()
		final = true
	}
	for _, variable := range pipe.Decl {
		if pipe.IsAssign {
			s.setVar(variable.Ident[0], v)
		} else {
			s.push(variable.Ident[0], v)
		}
	}
	return v
}

func (s *state) notAFunction(args []parse.Node, hasFinal bool) {
	if len(args) > 1 || hasFinal {
		s.errorf("can't give argument to non-function %s", args[0])
	}
}

func (s *state) evalCommand(dot val, cmd *parse.CommandNode, final val, hasFinal bool) val {
	first := cmd.Args[0]
	switch n := first.(type) {
	case *parse.FieldNode:
		s.at(n)
		return s.evalFieldChain(dot, n, n.Ident, cmd.Args, hasFinal)
	case *parse.ChainNode:
		return s.evalChainNode(dot, n, cmd.Args, hasFinal)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, cmd, cmd.Args, final, hasFinal)
	case *parse.PipeNode:
		s.notAFunction(cmd.Args, hasFinal)
		return s.evalPipeline(dot, n)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, n, cmd.Args, hasFinal)
	}
	s.at(first)
	s.notAFunction(cmd.Args, hasFinal)
	switch w := first.(type) {
	case *parse.BoolNode:
		return plain(w.True)
	case *parse.DotNode:
		return dot
	case *parse.NilNode:
		s.errorf("nil is not a command")
	case *parse.NumberNode:
		return s.idealConstant(w)
	case *parse.StringNode:
		return plain(w.Text)
	}
	s.errorf("can't evaluate command %q", first)
	return invalid
}

func (s *state) idealConstant(c *parse.NumberNode) val {
	s.at(c)
	switch {
	case c.IsComplex:
		return plain(c.Complex128)
	case c.IsFloat && !isHexInt(c.Text) && !strings.HasPrefix(c.Text, "'") && strings.ContainsAny(c.Text, ".eEpP"):
		return plain(c.Float64)
	case c.IsInt:
		n := int(c.Int64)
		if int64(n) != c.Int64 {
			s.errorf("%s overflows int", c.Text)
		}
		return plain(n)
	case c.IsUint:
		s.errorf("%s overflows int", c.Text)
	}
	return invalid
}

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

func (s *state) evalVariableNode(dot val, v *parse.VariableNode, args []parse.Node, hasFinal bool) val {
	s.at(v)
	value := s.varValue(v.Ident[0])
	if len(v.Ident) == 1 {
		if args != nil {
			s.notAFunction(args, hasFinal)
		}
		return value
	}
	return s.evalFieldChainFrom(value, v, v.Ident[1:], args, hasFinal)
}

func (s *state) evalChainNode(dot val, chain *parse.ChainNode, args []parse.Node, hasFinal bool) val {
	s.at(chain)
	if len(chain.Field) == 0 {
		s.errorf("internal error: no fields in evalChainNode")
	}
	if chain.Node.Type() == parse.NodeNil {
		s.errorf("indirection through explicit nil in %s", chain)
	}
	pipe := s.evalArg(dot, chain.Node)
	return s.evalFieldChainFrom(pipe, chain, chain.Field, args, hasFinal)
}

func (s *state) evalFieldChain(dot val, node parse.Node, ident []string, args []parse.Node, hasFinal bool) val {
	return s.evalFieldChainFrom(dot, node, ident, args, hasFinal)
}

func (s *state) evalFieldChainFrom(receiver val, node parse.Node, ident []string, args []parse.Node, hasFinal bool) val {
	n := len(ident)
	for i := 0; i < n-1; i++ {
		receiver = s.evalField(ident[i], receiver, false)
	}
	return s.evalField(ident[n-1], receiver, len(args) > 1 || hasFinal)
}

func (s *state) evalField(name string, receiver val, hasArgs bool) val {
	if !receiver.ok {
		return invalid
	}
	if receiver.v == nil {
		s.errorf("nil pointer evaluating %s.%s", receiver.typeName(), name)
	}
	if m, ok := receiver.v.(map[string]any); ok {
		if hasArgs {
			s.errorf("%s is not a method but has arguments", name)
		}
		if x, ok := m[name]; ok {
			return boxed(x)
		}
		return invalid
	}
	s.errorf("can't evaluate field %s in type %s", name, receiver.typeName())
	return invalid
}

// evalArg evaluates a function's argument (or a chain's operand).
func (s *state) evalArg(dot val, n parse.Node) val {
	s.at(n)
	switch arg := n.(type) {
	case *parse.DotNode:
		return dot
	case *parse.NilNode:
		return invalid
	case *parse.FieldNode:
		return s.evalFieldChain(dot, arg, arg.Ident, []parse.Node{n}, false)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, arg, nil, false)
	case *parse.PipeNode:
		return s.evalPipeline(dot, arg)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, arg, arg, nil, invalid, false)
	case *parse.ChainNode:
		return s.evalChainNode(dot, arg, nil, false)
	case *parse.BoolNode:
		return plain(arg.True)
	case *parse.NumberNode:
		return s.idealConstant(arg)
	case *parse.StringNode:
		return plain(arg.Text)
	}
	s.errorf("can't handle assignment of %s to empty interface argument", n)
	return invalid
}

// iface is the value as a function's interface{} parameter gets it.
func (v val) iface() any {
	if !v.ok {
		return nil
	}
	return v.v
}

func (s *state) evalFunction(dot val, node *parse.IdentifierNode, cmd parse.Node, args []parse.Node, final val, hasFinal bool) val {
	s.at(node)
	name := node.Ident
	if args != nil {
		args = args[1:]
	}
	numIn := len(args)
	if hasFinal {
		numIn++
	}
	want := func(fixed int, variadic bool) {
		s.arity(name, len(args), numIn, fixed, variadic)
	}
	evalAll := func() []val {
		vs := make([]val, 0, numIn)
		for _, a := range args {
			vs = append(vs, s.evalArg(dot, a))
		}
		if hasFinal {
			vs = append(vs, final)
		}
		return vs
	}
	fail := func(err error) {
		s.at(cmd)
		s.errorf("error calling %s: %w", name, err)
	}
	switch name {
	case "and", "or":
		want(1, true)
		var v val
		for _, a := range args {
			v = s.evalArg(dot, a).unbox()
			if truth(v) == (name == "or") {
				return v
			}
		}
		if hasFinal {
			v = final
		}
		return v
	case "not":
		want(1, false)
		return plain(!truth(evalAll()[0]))
	case "len":
		want(1, false)
		x := evalAll()[0]
		n, err := length(x)
		if err != nil {
			fail(err)
		}
		return plain(n)
	case "index":
		want(1, true)
		vs := evalAll()
		v, err := index(vs[0], vs[1:])
		if err != nil {
			fail(err)
		}
		return v
	case "slice":
		want(1, true)
		vs := evalAll()
		v, err := slice(vs[0], vs[1:])
		if err != nil {
			fail(err)
		}
		return v
	case "print", "println":
		want(0, true)
		vs := ifaces(evalAll())
		if name == "print" {
			return plain(fmt.Sprint(vs...))
		}
		return plain(fmt.Sprintln(vs...))
	case "printf":
		// fmt.Sprintf(format string, a ...any), as text/template calls it.
		vs := s.callArgs(dot, name, printfParams, true, args, final, hasFinal)
		return plain(fmt.Sprintf(vs[0].(string), vs[1:]...))
	case "html":
		want(0, true)
		return plain(htmlEscapeString(evalArgs(ifaces(evalAll()))))
	case "js":
		want(0, true)
		return plain(jsEscapeString(evalArgs(ifaces(evalAll()))))
	case "urlquery":
		want(0, true)
		return plain(url.QueryEscape(evalArgs(ifaces(evalAll()))))
	case "eq":
		want(1, true)
		vs := evalAll()
		b, err := eq(vs[0], vs[1:])
		if err != nil {
			fail(err)
		}
		return plain(b)
	case "ne", "lt", "le", "gt", "ge":
		want(2, false)
		vs := evalAll()
		b, err := compare(name, vs[0], vs[1])
		if err != nil {
			fail(err)
		}
		return plain(b)
	case "call":
		want(1, true)
		vs := evalAll()
		callee := ""
		if len(args) == 0 {
			callee = fmt.Sprint(final.iface())
		} else {
			callee = args[0].String()
		}
		if vs[0].unbox().v == nil {
			fail(errors.New("call of nil"))
		}
		fail(fmt.Errorf("non-function %s of type %s", callee, typeOf(vs[0].v)))
	}
	f, ok := s.t.funcs[name]
	if !ok {
		s.errorf("%q is not a defined function", name)
	}
	v, err := callFunc(f.Call, s.callArgs(dot, name, f.Params, f.Variadic, args, final, hasFinal))
	if err != nil {
		fail(err)
	}
	return plain(v)
}

var printfParams = []Param{String, Any}

// arity fails a call of name with nArgs arguments (numIn with the
// pipeline's value) as text/template's evalCall does for a function of
// fixed parameters, the last repeated when variadic (whose "got" counts
// the arguments alone, as text/template's does).
func (s *state) arity(name string, nArgs, numIn, fixed int, variadic bool) {
	if variadic {
		if numIn < fixed {
			s.errorf("wrong number of args for %s: want at least %d got %d", name, fixed, nArgs)
		}
	} else if numIn != fixed {
		s.errorf("wrong number of args for %s: want %d got %d", name, fixed, numIn)
	}
}

// callArgs evaluates a call's arguments as text/template's evalCall does
// for a Go function of params (the last repeated when variadic): the
// number of arguments first, then each argument in order, checked against
// its parameter as it is evaluated (so an error names the node text/template
// names), the pipeline's value last.
func (s *state) callArgs(dot val, name string, params []Param, variadic bool, args []parse.Node, final val, hasFinal bool) []any {
	numIn := len(args)
	if hasFinal {
		numIn++
	}
	numFixed := len(params)
	if variadic {
		numFixed--
	}
	s.arity(name, len(args), numIn, numFixed, variadic)
	param := func(i int) Param {
		if i >= numFixed {
			return params[len(params)-1]
		}
		return params[i]
	}
	out := make([]any, 0, numIn)
	for i, a := range args {
		if param(i) == String {
			s.at(a)
			switch a.(type) {
			case *parse.BoolNode, *parse.NumberNode:
				s.errorf("expected string; found %s", a)
			case *parse.NilNode:
				s.errorf("cannot assign nil to string")
			}
		}
		out = append(out, s.checkParam(param(i), s.evalArg(dot, a)))
	}
	if hasFinal {
		out = append(out, s.checkParam(param(len(args)), final))
	}
	return out
}

// checkParam is text/template's validateType of v for a parameter p.
func (s *state) checkParam(p Param, v val) any {
	if p == Any {
		return v.iface()
	}
	if !v.ok {
		s.errorf("invalid value; expected string")
	}
	str, ok := v.v.(string)
	if !ok {
		// A value still in its interface{} is taken out of it before the
		// check, but for a nil one.
		got := typeOf(v.v)
		if v.v == nil {
			got = v.typeName()
		}
		s.errorf("wrong type for value; expected string; got %s", got)
	}
	return str
}

// callFunc calls a caller's function, its panic an error, as text/template
// recovers a function's panic into "error calling NAME: …": a template
// never takes the process down.
func callFunc(f func([]any) (any, error), args []any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f(args)
}

func ifaces(vs []val) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.iface()
	}
	return out
}

// truth is text/template's truth of a value: the invalid value, nil,
// zero numbers, false and empty strings, maps and slices are false.
func truth(v val) bool {
	if !v.ok {
		return false
	}
	switch x := v.v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case int:
		return x != 0
	case uint8:
		return x != 0
	case complex128:
		return x != 0
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}

func (s *state) printValue(n parse.Node, v val) {
	s.at(n)
	var x any = "<no value>"
	if v.ok && v.v != nil {
		x = v.v
	}
	if _, err := fmt.Fprint(s.w, x); err != nil {
		s.errorf("%s", err)
	}
}

func length(v val) (int, error) {
	if v.ok && v.v == nil {
		return 0, errors.New("len of nil pointer")
	}
	switch x := v.v.(type) {
	case map[string]any:
		return len(x), nil
	case []any:
		return len(x), nil
	case string:
		return len(x), nil
	}
	if !v.ok {
		// text/template's len asks the invalid value's type and reports
		// reflect's panic.
		return 0, errors.New("reflect: call of reflect.Value.Type on zero Value")
	}
	return 0, fmt.Errorf("len of type %s", typeOf(v.v))
}

func indexArg(v val, limit int) (int, error) {
	var x int64
	switch n := v.unbox().v.(type) {
	case int:
		x = int64(n)
	case uint8:
		x = int64(n)
	case nil:
		return 0, errors.New("cannot index slice/array with nil")
	default:
		return 0, fmt.Errorf("cannot index slice/array with type %s", typeOf(n))
	}
	if x < 0 || int(x) < 0 || int(x) > limit {
		return 0, fmt.Errorf("index out of range: %d", x)
	}
	return int(x), nil
}

func index(item val, indexes []val) (val, error) {
	item = item.unbox()
	if !item.ok {
		return invalid, errors.New("index of untyped nil")
	}
	for _, ix := range indexes {
		if item.v == nil {
			return invalid, errors.New("index of nil pointer")
		}
		switch x := item.v.(type) {
		case []any:
			i, err := indexArg(ix, len(x))
			if err != nil {
				return invalid, err
			}
			if i == len(x) {
				return invalid, fmt.Errorf("reflect: slice index out of range")
			}
			item = boxed(x[i])
		case string:
			i, err := indexArg(ix, len(x))
			if err != nil {
				return invalid, err
			}
			if i == len(x) {
				return invalid, fmt.Errorf("reflect: string index out of range")
			}
			item = plain(x[i])
		case map[string]any:
			k, ok := ix.unbox().v.(string)
			if !ix.unbox().ok {
				return invalid, errors.New("value is nil; should be of type string")
			}
			if !ok {
				return invalid, fmt.Errorf("value has type %s; should be string", typeOf(ix.unbox().v))
			}
			item = boxed(x[k])
		default:
			return invalid, fmt.Errorf("can't index item of type %s", typeOf(item.v))
		}
	}
	return item, nil
}

func slice(item val, indexes []val) (val, error) {
	item = item.unbox()
	if !item.ok {
		return invalid, errors.New("slice of untyped nil")
	}
	if len(indexes) > 3 {
		return invalid, fmt.Errorf("too many slice indexes: %d", len(indexes))
	}
	var n int
	switch x := item.v.(type) {
	case string:
		if len(indexes) == 3 {
			return invalid, errors.New("cannot 3-index slice a string")
		}
		n = len(x)
	case []any:
		n = cap(x)
	default:
		return invalid, fmt.Errorf("can't slice item of type %s", typeOf(item.v))
	}
	idx := [3]int{0, n}
	if x, ok := item.v.([]any); ok {
		idx[1] = len(x)
	}
	for i, ix := range indexes {
		if ix.boxed {
			// text/template's slice, unlike index, does not take an
			// index out of its interface{}.
			return invalid, errors.New("cannot index slice/array with type interface {}")
		}
		x, err := indexArg(ix, n)
		if err != nil {
			return invalid, err
		}
		idx[i] = x
	}
	if idx[0] > idx[1] {
		return invalid, fmt.Errorf("invalid slice index: %d > %d", idx[0], idx[1])
	}
	switch x := item.v.(type) {
	case string:
		return plain(x[idx[0]:idx[1]]), nil
	case []any:
		if len(indexes) < 3 {
			return plain(x[idx[0]:idx[1]]), nil
		}
		if idx[1] > idx[2] {
			return invalid, fmt.Errorf("invalid slice index: %d > %d", idx[1], idx[2])
		}
		return plain(x[idx[0]:idx[1]:idx[2]]), nil
	}
	return invalid, nil
}

type kind int

const (
	invalidKind kind = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

var (
	errBadComparisonType = errors.New("invalid type for comparison")
	errNoComparison      = errors.New("missing argument for comparison")
)

func basicKind(x any) kind {
	switch x.(type) {
	case bool:
		return boolKind
	case int:
		return intKind
	case uint8:
		return uintKind
	case float64:
		return floatKind
	case complex128:
		return complexKind
	case string:
		return stringKind
	}
	return invalidKind
}

func toInt(x any) int64 {
	if n, ok := x.(int); ok {
		return int64(n)
	}
	return 0
}

func toUint(x any) uint64 {
	if n, ok := x.(uint8); ok {
		return uint64(n)
	}
	return 0
}

func eq(a val, bs []val) (bool, error) {
	a = a.unbox()
	if len(bs) == 0 {
		return false, errNoComparison
	}
	k1 := basicKind(a.v)
	for _, b := range bs {
		b = b.unbox()
		k2 := basicKind(b.v)
		truth := false
		if k1 != k2 {
			switch {
			case k1 == intKind && k2 == uintKind:
				truth = toInt(a.v) >= 0 && uint64(toInt(a.v)) == toUint(b.v)
			case k1 == uintKind && k2 == intKind:
				truth = toInt(b.v) >= 0 && toUint(a.v) == uint64(toInt(b.v))
			default:
				if a.ok && b.ok {
					return false, fmt.Errorf("incompatible types for comparison: %s and %s", typeOf(a.v), typeOf(b.v))
				}
			}
		} else if k1 == invalidKind {
			aNil, bNil := a.v == nil, b.v == nil
			if !aNil || !bNil {
				// Maps and slices are not comparable; text/template
				// reports them so.
				switch {
				case aNil || bNil:
					truth = false
				case typeOf(a.v) != typeOf(b.v):
					return false, fmt.Errorf("non-comparable types %v: %s, %s: %v", a.v, typeOf(a.v), typeOf(b.v), b.v)
				default:
					return false, fmt.Errorf("non-comparable type %v: %s", b.v, typeOf(b.v))
				}
			} else {
				truth = true
			}
		} else {
			truth = a.v == b.v
		}
		if truth {
			return true, nil
		}
	}
	return false, nil
}

func lt(a, b val) (bool, error) {
	a, b = a.unbox(), b.unbox()
	k1, k2 := basicKind(a.v), basicKind(b.v)
	if k1 == invalidKind || k2 == invalidKind {
		return false, errBadComparisonType
	}
	if k1 != k2 {
		switch {
		case k1 == intKind && k2 == uintKind:
			return toInt(a.v) < 0 || uint64(toInt(a.v)) < toUint(b.v), nil
		case k1 == uintKind && k2 == intKind:
			return toInt(b.v) >= 0 && toUint(a.v) < uint64(toInt(b.v)), nil
		}
		return false, fmt.Errorf("incompatible types for comparison: %s and %s", typeOf(a.v), typeOf(b.v))
	}
	switch x := a.v.(type) {
	case float64:
		return x < b.v.(float64), nil
	case int:
		return x < b.v.(int), nil
	case uint8:
		return x < b.v.(uint8), nil
	case string:
		return x < b.v.(string), nil
	}
	return false, errBadComparisonType
}

func compare(name string, a, b val) (bool, error) {
	switch name {
	case "ne":
		t, err := eq(a, []val{b})
		return !t, err
	case "lt":
		return lt(a, b)
	case "le":
		t, err := lt(a, b)
		if t || err != nil {
			return t, err
		}
		return eq(a, []val{b})
	case "gt":
		if _, err := lt(a, b); err != nil {
			return false, err
		}
		t, err := compare("le", a, b)
		return !t, err
	default: // ge
		t, err := lt(a, b)
		return !t, err
	}
}

// evalArgs is text/template's: one string argument as it is, anything
// else as fmt.Sprint prints it, the invalid value as "<no value>".
func evalArgs(args []any) string {
	if len(args) == 1 {
		if s, ok := args[0].(string); ok {
			return s
		}
	}
	for i, a := range args {
		if a == nil {
			args[i] = "<no value>"
		}
	}
	return fmt.Sprint(args...)
}

// htmlEscapeString and jsEscapeString are text/template's HTMLEscapeString
// and JSEscapeString, adapted from Go's source (BSD-style licence), so that
// the package never imports text/template.
func htmlEscapeString(s string) string {
	if !strings.ContainsAny(s, "'\"&<>\000") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\000':
			b.WriteString("\uFFFD")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func jsEscapeString(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c < ' ' || utf8.RuneSelf <= c || strings.IndexByte(`\'"<>&=`, c) >= 0) {
			b.WriteByte(c)
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '\\':
				b.WriteString(`\\`)
			case '\'':
				b.WriteString(`\'`)
			case '"':
				b.WriteString(`\"`)
			case '<':
				b.WriteString(`\u003C`)
			case '>':
				b.WriteString(`\u003E`)
			case '&':
				b.WriteString(`\u0026`)
			case '=':
				b.WriteString(`\u003D`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0x0f])
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsPrint(r) {
			b.WriteString(s[i : i+size])
		} else {
			fmt.Fprintf(&b, "\\u%04X", r)
		}
		i += size - 1
	}
	return b.String()
}
