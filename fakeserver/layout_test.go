package fakeserver_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goList runs go list with args in the module and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestLayout checks the package graph the architecture promises: no
// package under fakeserver/internal imports fakeserver (dependencies run
// one way), and the binary does not link the testing package.
func TestLayout(t *testing.T) {
	const self = "github.com/confpay/confpay-go/fakeserver"
	for _, pkg := range goList(t, "./internal/...") {
		for _, dep := range goList(t, "-deps", pkg) {
			if dep == self {
				t.Errorf("%s imports fakeserver", pkg)
			}
		}
	}
	for _, dep := range goList(t, "-deps", "../cmd/confpay-fakeserver") {
		if dep == "testing" {
			t.Error("cmd/confpay-fakeserver links the testing package")
		}
	}
}

// TestHandlersNeverLock: the /v1 handler files (api_*.go) and the /_fake
// routes (admin.go) parse, call one domain operation and render; no lock
// is taken there (issue 12: handlers never lock).
func TestHandlersNeverLock(t *testing.T) {
	files, err := filepath.Glob("api_*.go")
	if err != nil || len(files) < 4 {
		t.Fatalf("api_*.go: %v %v, want the four handler files", files, err)
	}
	for _, f := range append(files, "admin.go") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, ".Lock()") || strings.Contains(line, ".RLock()") {
				t.Errorf("%s:%d takes a lock: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// domainLayers is the order of fakeserver's domain files, lowest first
// (doc.go, "Layout"): a domain file refers only to its own declarations,
// to files of lower layers, and to the hub (server.go: Server and
// network; http.go: calls and error values). Files of one layer do not
// refer to each other. Handlers, the direct API, admin routes, seeds and
// the delivery wiring sit above all of them.
var domainLayers = [][]string{
	{"assets.go"},
	{"policy.go"},
	{"identity.go"},
	{"ledger.go"},
	{"transfers.go"},
	{"held.go"},
	{"events.go"},
	{"views.go", "balances.go"},
	{"pay.go", "agents.go"},
}

// hubFiles hold what every layer shares: the Server and its lock, the
// network, the call and the error values; persist.go is the lock's
// commit (stateMu.Unlock writes the data directory) and the marks every
// domain file sets on what it changed.
var hubFiles = []string{"server.go", "http.go", "persist.go"}

// TestDomainFilesAreLayered: the domain files form no cycle (issue 12:
// "the cycle among domain files is gone"). It type-checks the package and
// follows every use of a package-level name, method or field to the file
// that declares it.
func TestDomainFilesAreLayered(t *testing.T) {
	rank := map[string]int{}
	for i, layer := range domainLayers {
		for _, f := range layer {
			rank[f] = i
		}
	}
	edges := fileReferences(t)
	for _, from := range slices.Sorted(maps.Keys(edges)) {
		rf, ok := rank[from]
		if !ok {
			continue // not a domain file
		}
		for _, to := range slices.Sorted(maps.Keys(edges[from])) {
			what := edges[from][to]
			rt, isDomain := rank[to]
			switch {
			case slices.Contains(hubFiles, to):
			case !isDomain:
				t.Errorf("%s refers to %s (%s), which is above the domain files", from, to, what)
			case rt >= rf:
				t.Errorf("%s (layer %d) refers to %s (layer %d): %s", from, rf, to, rt, what)
			}
		}
	}
	for f := range rank {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("domain file %s: %v", f, err)
		}
	}
}

// fileReferences type-checks the package's non-test files (importing
// dependencies from the build's export data) and returns, for each file,
// the other files it refers to, with the names it uses there.
func fileReferences(t *testing.T) map[string]map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, file, ok := strings.Cut(line, " "); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("github.com/confpay/confpay-go/fakeserver", fset, files, info)
	if err != nil {
		t.Fatalf("type-checking fakeserver: %v", err)
	}
	edges := map[string]map[string]string{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !declaredAtTop(pkg, obj) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		if edges[from] == nil {
			edges[from] = map[string]string{}
		}
		if !strings.Contains(" "+edges[from][to]+" ", " "+obj.Name()+" ") {
			edges[from][to] = strings.TrimSpace(edges[from][to] + " " + obj.Name())
		}
	}
	return edges
}

// declaredAtTop reports whether obj is a package-level name, a method or a
// struct field (not a local variable, parameter or label).
func declaredAtTop(pkg *types.Package, obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Var:
		return o.IsField() || o.Parent() == pkg.Scope()
	case *types.Func:
		return o.Signature().Recv() != nil || o.Parent() == pkg.Scope()
	default:
		return obj.Parent() == pkg.Scope()
	}
}
