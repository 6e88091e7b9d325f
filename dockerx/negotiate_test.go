package dockerx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

// Every call that reaches the daemon must negotiate first: a method of
// dockerAPI that the wrapper does not define itself would be promoted from
// the SDK client and negotiate lazily, racing concurrent calls again.
func TestNegotiatingCoversTheAPI(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "negotiate.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil {
			continue
		}
		if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "negotiating" {
				defined[fn.Name.Name] = true
			}
		}
	}
	// These never depend on the negotiated version.
	exempt := map[string]bool{"Ping": true, "DaemonHost": true, "Close": true}
	api := reflect.TypeOf((*dockerAPI)(nil)).Elem()
	for i := 0; i < api.NumMethod(); i++ {
		m := api.Method(i).Name
		if !exempt[m] && !defined[m] {
			t.Errorf("dockerAPI.%s is not wrapped by negotiating: it would negotiate lazily and race", m)
		}
	}
}
