package queue_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// serviceFiles are the files of this package that hold the Service and its parts (the tick
// loop, leadership, feeds, stats reads, webhook delivery, metrics, spans): the ones to move
// whole into the Service's own package (issue 32 item 2). Every other non-test file is the
// queue's domain and lifecycle.
var serviceFiles = []string{
	"acceptance_service.go", "allocator_service.go", "backfill_service.go", "caps.go",
	"definitions.go", "events.go", "feed.go", "lease.go", "loop.go", "matchfunction_backoff.go",
	"matchfunction_metrics.go", "matchfunction_shadow.go", "matchfunction_shadowcall.go",
	"matchfunction_tick.go", "metrics.go", "owner.go", "partitionrun.go", "placement_service.go",
	"results.go", "service.go", "spans.go", "standing.go", "stats_service.go", "statsread.go",
	"ticketqueues.go", "tickets.go", "webhook_service.go",
}

// serviceTypes are the Service's own types: a file with a method on one is a Service file.
var serviceTypes = []string{"Service", "runner", "feeds", "feed"}

// The domain's files use nothing the Service's files declare, so that the Service can leave
// the package by moving whole files, the domain building without them. A method on one of
// serviceTypes outside serviceFiles, a method a Service file adds to a domain type, or a
// domain file that names a declaration of a Service file fails it.
func TestDomainFilesNeedNoServiceFile(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if files[name], err = parser.ParseFile(fset, name, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	declared, methods := map[string]string{}, map[string]string{} // name -> its Service file
	for _, name := range serviceFiles {
		f, ok := files[name]
		if !ok {
			t.Fatalf("%s is listed as a Service file but is not in the package", name)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if recv := receiverType(d); recv == "" {
					declared[d.Name.Name] = name
				} else {
					methods[recv+"."+d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = name
						}
					}
				}
			}
		}
	}
	// A Service file adds no method to a domain type: it could not, from a package of its own.
	for m, file := range methods {
		if recv, _, _ := strings.Cut(m, "."); declared[recv] == "" && !slices.Contains(serviceTypes, recv) {
			t.Errorf("%s: method %s on a domain type: move it to the type's file", file, m)
		}
	}
	for name, f := range files {
		if slices.Contains(serviceFiles, name) {
			continue
		}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if recv := receiverType(n); slices.Contains(serviceTypes, recv) {
					t.Errorf("%s: method %s.%s outside the Service's files: list the file or move it", name, recv, n.Name.Name)
				}
				for _, part := range []ast.Node{n.Recv, n.Type, n.Body} { // not its own name
					if part != nil && !reflect.ValueOf(part).IsNil() {
						ast.Inspect(part, visit)
					}
				}
				return false
			case *ast.SelectorExpr:
				ast.Inspect(n.X, visit) // not Sel: a field's or method's name
				return false
			case *ast.KeyValueExpr:
				if _, ok := n.Key.(*ast.Ident); !ok { // a field's name in a literal is not a use
					ast.Inspect(n.Key, visit)
				}
				ast.Inspect(n.Value, visit)
				return false
			case *ast.Ident:
				if from, ok := declared[n.Name]; ok && n.Obj == nil { // resolved in its file: its own
					t.Errorf("%s: %s, declared in the Service's %s", fset.Position(n.Pos()), n.Name, from)
				}
			}
			return true
		}
		ast.Inspect(f, visit)
	}
	if len(declared) < 50 {
		t.Fatalf("found %d declarations in the Service's files: is the list right?", len(declared))
	}
}

// receiverType is the name of d's receiver's type, "" for a function.
func receiverType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	x := d.Recv.List[0].Type
	if star, ok := x.(*ast.StarExpr); ok {
		x = star.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
