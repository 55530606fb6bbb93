// Package snippetcheck holds a test that compiles, and where it makes sense
// runs, every Go snippet of the documentation against the module's current
// code, so the docs cannot rot.
//
// Every ```go fenced block in README.md and docs/*.md is checked (a fence
// may be indented, as in a list item; the indentation is removed). Each
// block becomes its own package, testdata/snippets/sNN under this package
// (under the nested module's testdata for a module marker), inside the
// module, so it builds with the module's own go.mod. The directories are
// stable and the sources reach the go command through -overlay, never
// written into the tree: the build cache recognises an unchanged snippet
// from one run to the next, and two runs at once cannot disturb each
// other. The go command runs with the environment's settings, so a module
// a nested module needs is fetched the way go test itself fetches one. How
// a block is checked depends on its shape:
//
//   - A block with a package clause is a complete file and is built as is
//     (go vet type-checks it; package main included).
//
//   - A block of declarations (funcs, types, vars) is a file without its
//     package clause. If it declares a func Test..., it is a test file and
//     runs with go test.
//
//   - Any other block is a fragment: statements, optionally preceded by its
//     own import declarations. It is compiled as the body of a function.
//     Names it uses but does not declare (ctx, client...) are declared in an
//     HTML comment on the line before the fence, as that function's
//     parameters:
//
//     <!-- snippet: given ctx context.Context, client *confpay.Client -->
//
//     Variables a fragment declares and does not use are used for it (an
//     illustration may stop at t, err := ...), so only real mistakes fail.
//
// A snippet that needs a nested module's dependencies (OpenTelemetry, say)
// names that module's directory in its marker, and builds there:
//
//	<!-- snippet: given tp trace.TracerProvider; module examples/otel -->
//
// In every shape, the packages a block refers to by their usual name
// (confpay, decrypt, fakeserver, webhookverify and common standard ones)
// are imported when the block does not import them itself.
//
// Positions are mapped back with //line directives: a failure names the
// Markdown file and line (docs/fakeserver.md:31:2) with the compiler's
// message.
package snippetcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// knownImports are the packages a snippet may use without importing them.
var knownImports = map[string]string{
	"confpay":       "github.com/confpay/confpay-go",
	"decrypt":       "github.com/confpay/confpay-go/decrypt",
	"fakeserver":    "github.com/confpay/confpay-go/fakeserver",
	"webhookverify": "github.com/confpay/confpay-go/webhookverify",
	"context":       "context",
	"json":          "encoding/json",
	"errors":        "errors",
	"fmt":           "fmt",
	"http":          "net/http",
	"io":            "io",
	"log":           "log",
	"os":            "os",
	"slog":          "log/slog",
	"strings":       "strings",
	"testing":       "testing",
	"synctest":      "testing/synctest",
	"time":          "time",
}

// snippet is one ```go block.
type snippet struct {
	file   string // relative to the module root, slash-separated
	fence  int    // line of the opening fence
	marker int    // line of the snippet marker, 0 if none
	given  string // parameter list from the marker
	module string // directory of the module it builds in, from the marker; "" for the root
	code   []string
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.fence) }

var markerRE = regexp.MustCompile(`^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$`)

// extract returns the ```go blocks of a Markdown file.
func extract(t *testing.T, file string, text string) []snippet {
	var out []snippet
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(trimmed, "```go") || strings.TrimSpace(trimmed) != "```go" {
			continue
		}
		indent := line[:len(line)-len(trimmed)]
		s := snippet{file: file, fence: i + 1}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if m := markerRE.FindStringSubmatch(lines[j]); m != nil {
				s.marker = j + 1
				for _, part := range strings.Split(m[1], ";") {
					part = strings.TrimSpace(part)
					if given, ok := strings.CutPrefix(part, "given "); ok {
						s.given = strings.TrimSpace(given)
					} else if mod, ok := strings.CutPrefix(part, "module "); ok {
						s.module = strings.TrimSpace(mod)
					} else {
						t.Errorf("%s:%d: unknown snippet marker part %q (want <!-- snippet: given name type, ...; module dir -->)", file, j+1, part)
					}
				}
			}
			break
		}
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			s.code = append(s.code, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			t.Errorf("%s: unclosed ```go block", s)
		}
		out = append(out, s)
	}
	return out
}

// generated is the Go source made from a snippet.
type generated struct {
	name   string // file name: snippet.go or snippet_test.go
	source string
	test   bool // run it with go test
}

// generate turns a snippet into a Go file of package pkg; root is the
// module root, for the //line directives.
func generate(s snippet, root, pkg string) (generated, error) {
	code := strings.Join(s.code, "\n")
	line := func(n int) string {
		return fmt.Sprintf("\n//line %s:%d\n", filepath.Join(root, filepath.FromSlash(s.file)), n)
	}
	first := s.fence + 1 // line of the first line of code

	// A complete file.
	if f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly); err == nil && f.Name != nil {
		return generated{name: "snippet.go", source: line(first)[1:] + code + "\n"}, nil
	}

	var src string
	decl := false
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.SkipObjectResolution); err == nil {
		decl = true
		src = "package " + pkg + "\n" + line(first) + code + "\n"
	} else {
		// A fragment: its leading import declarations, then statements.
		n := leadingImports(s.code)
		header := s.marker
		if header == 0 {
			header = s.fence
		}
		src = "package " + pkg + "\n"
		if n > 0 {
			src += line(first) + strings.Join(s.code[:n], "\n") + "\n"
		}
		src += line(header) + "func _(" + s.given + ") {" + line(first+n) + strings.Join(s.code[n:], "\n") + "\n}\n"
	}

	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.AllErrors)
	if err != nil {
		return generated{}, err
	}
	if !decl {
		src = useDeclared(fset, f, src)
	}
	src = addImports(f, src)
	g := generated{name: "snippet.go", source: src}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
			g.name, g.test = "snippet_test.go", true
		}
	}
	return g, nil
}

// leadingImports counts the lines of the import declarations (and the
// blank lines around them) at the top of a fragment.
func leadingImports(code []string) int {
	n := 0
	for n < len(code) {
		l := strings.TrimSpace(code[n])
		switch {
		case l == "":
			n++
		case strings.HasPrefix(l, "import ("):
			for n < len(code) && strings.TrimSpace(code[n]) != ")" {
				n++
			}
			n++
		case strings.HasPrefix(l, "import "):
			n++
		default:
			return n
		}
	}
	return n
}

// addImports imports the known packages that f uses without importing.
func addImports(f *ast.File, src string) string {
	have := map[string]bool{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		have[name] = true
	}
	var add []string
	for _, id := range f.Unresolved {
		if path, ok := knownImports[id.Name]; ok && !have[id.Name] {
			have[id.Name] = true
			add = append(add, fmt.Sprintf("import %s %q", id.Name, path))
		}
	}
	if len(add) == 0 {
		return src
	}
	sort.Strings(add)
	// After the package clause, which is the first line.
	pkgLine, rest, _ := strings.Cut(src, "\n")
	return pkgLine + "\n" + strings.Join(add, "\n") + "\n" + rest
}

// useDeclared appends "_ = name" for every variable a fragment declares, at
// the end of the block that declares it and on the same line, so an
// illustration that stops at "t, err := ..." compiles and no line moves.
func useDeclared(fset *token.FileSet, f *ast.File, src string) string {
	tf := fset.File(f.Pos())
	type insertion struct {
		at   int
		text string
	}
	var ins []insertion
	names := func(stmts []ast.Stmt) []string {
		var out []string
		add := func(e ast.Expr) {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" && !slices.Contains(out, id.Name) {
				out = append(out, id.Name)
			}
		}
		for _, st := range stmts {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, e := range st.Lhs {
						add(e)
					}
				}
			case *ast.DeclStmt:
				if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, sp := range gd.Specs {
						for _, n := range sp.(*ast.ValueSpec).Names {
							add(n)
						}
					}
				}
			}
		}
		return out
	}
	use := func(at token.Pos, vars []string) {
		if len(vars) == 0 {
			return
		}
		text := ""
		for _, v := range vars {
			text += "; _ = " + v
		}
		ins = append(ins, insertion{tf.Offset(at), text + ";"})
	}
	// atEnd inserts at the end of a block: before its closing brace.
	atEnd := func(b *ast.BlockStmt, vars []string) {
		if b != nil {
			use(b.Rbrace, vars)
		}
	}
	clauseEnd := func(c *ast.CaseClause) token.Pos {
		if len(c.Body) > 0 {
			return c.Body[len(c.Body)-1].End()
		}
		return c.Colon + 1
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			atEnd(n, names(n.List))
		case *ast.CaseClause:
			use(clauseEnd(n), names(n.Body))
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				atEnd(n.Body, names([]ast.Stmt{&ast.AssignStmt{Lhs: []ast.Expr{n.Key, n.Value}, Tok: token.DEFINE}}))
			}
		case *ast.IfStmt:
			if n.Init != nil {
				atEnd(n.Body, names([]ast.Stmt{n.Init}))
			}
		case *ast.TypeSwitchStmt:
			if as, ok := n.Assign.(*ast.AssignStmt); ok {
				for _, c := range n.Body.List {
					use(clauseEnd(c.(*ast.CaseClause)), names([]ast.Stmt{as}))
				}
			}
		}
		return true
	})
	// Insert from the end, so earlier offsets stay valid.
	sort.Slice(ins, func(i, j int) bool { return ins[i].at > ins[j].at })
	for _, in := range ins {
		src = src[:in.at] + in.text + src[in.at:]
	}
	return src
}

// moduleRoot is the module's directory: this package sits two levels
// below it (internal/<name>), and go test runs in the package directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goCmd runs the go command with the toolchain running this test and the
// environment's module settings: a module that is not in the module cache
// yet is downloaded as go test downloads one (an earlier version forced
// GOPROXY=off, and go test ./... failed on every machine that had never
// fetched examples/otel's dependencies).
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	return string(bytes.TrimSpace(out)), err
}

// TestDocSnippets compiles every Go snippet of README.md and docs/*.md and
// runs the ones that are tests.
func TestDocSnippets(t *testing.T) {
	root := moduleRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var snippets []snippet
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		snippets = append(snippets, extract(t, filepath.ToSlash(rel), string(b))...)
	}
	if len(snippets) == 0 {
		t.Fatal("no ```go blocks found: the extraction is broken")
	}

	// The snippets of each module are packages under its testdata/snippets
	// (this package's, for the root module); their sources are an overlay.
	type module struct {
		dir, gen   string
		overlay    map[string]string // package file -> generated source file
		build, run []string          // package directories, relative to dir
	}
	sources := t.TempDir()
	modules := map[string]*module{}
	where := map[string]string{} // package directory -> snippet
	for i, s := range snippets {
		m := modules[s.module]
		if m == nil {
			m = &module{dir: "."}
			if s.module != "" {
				m.dir = filepath.Join(root, filepath.FromSlash(s.module))
				if _, err := os.Stat(filepath.Join(m.dir, "go.mod")); err != nil {
					t.Errorf("%s: no module in %s: %v", s, s.module, err)
					continue
				}
			}
			m.gen = filepath.Join("testdata", "snippets")
			m.overlay = map[string]string{}
			modules[s.module] = m
		}
		pkg := fmt.Sprintf("s%02d", i+1)
		g, err := generate(s, root, pkg)
		if err != nil {
			t.Errorf("%s: the snippet does not parse:\n%v", s, err)
			continue
		}
		rel := "./" + filepath.ToSlash(filepath.Join(m.gen, pkg))
		dir, err := filepath.Abs(filepath.Join(m.dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		// The directory must exist (go vet runs in it); the file is only
		// in the overlay.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src := filepath.Join(sources, fmt.Sprintf("%s-%s", pkg, g.name))
		if err := os.WriteFile(src, []byte(g.source), 0o644); err != nil {
			t.Fatal(err)
		}
		m.overlay[filepath.Join(dir, g.name)] = src
		where[rel] = s.String()
		if g.test {
			m.run = append(m.run, rel)
		} else {
			m.build = append(m.build, rel)
		}
	}

	// Per module, one go command for all the snippets that compile only,
	// one for the tests: each snippet is its own package, and //line
	// directives make every message point into the Markdown.
	for name, m := range modules {
		if name == "" {
			name = "the root module"
		}
		t.Logf("%s: %d snippets compiled, %d run as tests", name, len(m.build), len(m.run))
		overlay := filepath.Join(sources, fmt.Sprintf("overlay-%p.json", m))
		b, err := json.Marshal(map[string]any{"Replace": m.overlay})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(overlay, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(m.build) > 0 {
			if out, err := goCmd(m.dir, append([]string{"vet", "-overlay", overlay}, m.build...)...); err != nil {
				t.Errorf("documentation snippets do not compile in %s (positions are in the Markdown files):\n%s\n%s", name, out, legend(where, out))
			}
		}
		if len(m.run) > 0 {
			if out, err := goCmd(m.dir, append([]string{"test", "-overlay", overlay}, m.run...)...); err != nil {
				t.Errorf("documentation snippets that are tests fail in %s (positions are in the Markdown files):\n%s\n%s", name, out, legend(where, out))
			}
		}
	}
}

// legend names the snippet behind each generated package the go command's
// output mentions.
func legend(where map[string]string, out string) string {
	var b strings.Builder
	dirs := make([]string, 0, len(where))
	for dir := range where {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		if strings.Contains(out, strings.TrimPrefix(dir, "./")) {
			fmt.Fprintf(&b, "package %s is the snippet at %s\n", filepath.Base(dir), where[dir])
		}
	}
	return b.String()
}
