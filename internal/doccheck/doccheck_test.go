// Package doccheck holds a test that keeps the project's promise that every
// exported name has a doc comment.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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

// TestExportedNamesHaveDocComments parses every non-test Go file of the
// module and reports each exported declaration without a doc comment.
func TestExportedNamesHaveDocComments(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var missing, misnamed []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		// Every doc comment, of any file, starts with the name it documents.
		misnamed = append(misnamed, notStartingWithName(fset, rel, f)...)
		if f.Name.Name == "main" || strings.HasSuffix(path, "_test.go") {
			return nil // commands document themselves in their package comment
		}
		missing = append(missing, undocumented(fset, rel, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("exported name without a doc comment: %s", m)
	}
	for _, m := range misnamed {
		t.Errorf("doc comment does not start with its name: %s", m)
	}
}

// testFunc matches the functions the testing package runs.
var testFunc = regexp.MustCompile(`^(Test|Example|Benchmark|Fuzz)`)

// startsWithName reports whether doc begins with name as a word, as go
// doc and gopls expect ("Name does ...", "Name, ...").
func startsWithName(doc *ast.CommentGroup, name string) bool {
	text := doc.Text()
	if text == "" {
		return true // only directives, such as //go:embed
	}
	if !strings.HasPrefix(text, name) {
		return false
	}
	rest := text[len(name):]
	return rest == "" || strings.ContainsRune(" \n,.:;'(", rune(rest[0]))
}

// notStartingWithName lists the functions, methods and types of f, and
// the constants and variables declared alone, whose doc comment does not
// start with their name (exported or not: a comment that names an old
// identifier misleads a reader of the code as much as one of go doc).
// Test, Example, Benchmark and Fuzz functions are exempt: go doc shows an
// example's comment as prose.
func notStartingWithName(fset *token.FileSet, rel string, f *ast.File) []string {
	var out []string
	report := func(pos token.Pos, name string) {
		out = append(out, rel+":"+itoa(fset.Position(pos).Line)+": "+name)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Doc == nil || testFunc.MatchString(d.Name.Name) {
				continue
			}
			if !startsWithName(d.Doc, d.Name.Name) {
				report(d.Pos(), d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				doc := d.Doc
				if d.Lparen.IsValid() {
					doc = nil // a group's comment speaks for the group
				}
				var name *ast.Ident
				switch s := spec.(type) {
				case *ast.TypeSpec:
					name = s.Name
					if s.Doc != nil {
						doc = s.Doc
					}
				case *ast.ValueSpec:
					if len(s.Names) != 1 {
						continue
					}
					name = s.Names[0]
					if s.Doc != nil {
						doc = s.Doc
					}
				default:
					continue
				}
				if doc != nil && !startsWithName(doc, name.Name) {
					report(name.Pos(), name.Name)
				}
			}
		}
	}
	return out
}

// undocumented lists the exported declarations of f that have no doc.
func undocumented(fset *token.FileSet, rel string, f *ast.File) []string {
	var out []string
	report := func(pos token.Pos, name string) {
		out = append(out, rel+":"+itoa(fset.Position(pos).Line)+": "+name)
	}
	exportedTypes := map[string]bool{}
	for _, decl := range f.Decls {
		if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, spec := range g.Specs {
				if ts := spec.(*ast.TypeSpec); ts.Name.IsExported() {
					exportedTypes[ts.Name.Name] = true
				}
			}
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue // methods of unexported types are not documented API
				}
				report(d.Pos(), recv+"."+d.Name.Name)
				continue
			}
			report(d.Pos(), d.Name.Name)
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			grouped := d.Lparen.IsValid()
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
						report(s.Pos(), s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						if d.Doc == nil && s.Doc == nil && (s.Comment == nil || !grouped) {
							report(n.Pos(), n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

func receiverName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverName(t.X)
	case *ast.IndexExpr:
		return receiverName(t.X)
	case *ast.IndexListExpr:
		return receiverName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestNotStartingWithNameCatchesAStaleComment: a comment that names an old
// identifier is reported; good ones are not.
func TestNotStartingWithNameCatchesAStaleComment(t *testing.T) {
	const src = `package p

// OldName does something.
func NewName() {}

// Good is fine.
func Good() {}

// Server, the thing.
type Server struct{}

// A Limit is misnamed.
type Limit int

// Max is fine.
const Max = 1

// Sizes.
const (
	A = 1
	B = 2
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := notStartingWithName(fset, "p.go", f)
	want := []string{"p.go:4: NewName", "p.go:13: Limit"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("reported %q, want %q", got, want)
	}
}
