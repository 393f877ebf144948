package queuesvc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// runnerFiles are the runner's files: what it uses of the replica comes through leaderDeps, so
// none of them names the Service (issue 32: the loop toward its own package).
var runnerFiles = []string{"loop.go", "partitionrun.go", "leaderdeps.go", "acceptance_leader.go", "allocator_leader.go",
	"webhook_leader.go", "matchfunction_tick.go", "matchfunction_backoff.go", "matchfunction_shadowcall.go",
	"matchfunction_shadow.go"}

func TestTheRunnerNamesNoService(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range runnerFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "Service" {
				t.Errorf("%s names the Service; the runner's uses go through leaderDeps", fset.Position(id.Pos()))
			}
			return true
		})
	}
}
