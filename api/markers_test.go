package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// omitemptyExceptions are fields whose omitempty does not follow their
// +optional or +required marker, each with the reason (repeated in the
// field's comment).
var omitemptyExceptions = map[string]string{}

// field is one field of an API struct, as the Go source declares it.
type field struct {
	pos      token.Position
	owner    string // Type.Field
	json     string // the JSON name
	optional bool   // +optional
	required bool   // +required
	omit     bool   // omitempty or omitzero
	doc      string // the comment, markers left out
	spec     bool   // reachable from a kind's spec
}

// TestFieldMarkers checks the conventions of every field of every API
// type (docs/design/adding-a-system.md, "The API"): it is marked
// +optional or +required, it has omitempty exactly when it is optional,
// its comment starts with its JSON name, and a spec field's comment says
// its default (or that it is required) and whether it can change.
// Embedded inline structs are checked where they are declared; TypeMeta
// and a list kind's items follow Kubernetes' own types.
func TestFieldMarkers(t *testing.T) {
	fields := apiFields(t)
	if len(fields) < 100 {
		t.Fatalf("found only %d fields under api/: is the walk broken?", len(fields))
	}
	for _, f := range fields {
		switch {
		case f.optional == f.required:
			t.Errorf("%s: %s has %s", f.pos, f.owner, map[bool]string{true: "both +optional and +required", false: "neither +optional nor +required"}[f.optional])
		case f.omit != f.optional && omitemptyExceptions[f.owner] == "":
			t.Errorf("%s: %s is %s but its JSON tag %s omitempty: optional fields have it, required ones do not",
				f.pos, f.owner, map[bool]string{true: "+optional", false: "+required"}[f.optional], map[bool]string{true: "has", false: "lacks"}[f.omit])
		}
		if first, _, _ := strings.Cut(f.doc, " "); strings.TrimRight(first, ":,.") != f.json {
			t.Errorf("%s: %s's comment starts with %q, not with its JSON name %q", f.pos, f.owner, first, f.json)
		}
		if !f.spec {
			continue
		}
		low := strings.ToLower(f.doc)
		if f.optional && !strings.Contains(low, "default") {
			t.Errorf("%s: %s is optional, and its comment says no default (\"Default: none\" if it has none)", f.pos, f.owner)
		}
		if f.required && !strings.Contains(low, "required") {
			t.Errorf("%s: %s is +required, and its comment does not say \"Required\"", f.pos, f.owner)
		}
		if !strings.Contains(low, "immutable") && !strings.Contains(low, "can change") && !strings.Contains(low, "cannot change") {
			t.Errorf("%s: %s's comment says neither \"can change\" nor \"immutable\"", f.pos, f.owner)
		}
	}
	for owner := range omitemptyExceptions {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.owner == owner }) {
			t.Errorf("omitemptyExceptions names %s, which is no field", owner)
		}
	}
}

// apiFields parses every API package and returns their fields, marking
// those reachable from a kind's spec (a field named Spec).
func apiFields(t *testing.T) []field {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("*", "v1alpha1"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no API packages: %v", err)
	}
	fset := token.NewFileSet()
	types := map[string]*ast.StructType{} // "dir.Type"
	var order []string
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(filepath.Base(name), "zz_generated") {
				continue
			}
			file, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range gen.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						key := dir + "." + ts.Name.Name
						types[key] = st
						order = append(order, key)
					}
				}
			}
		}
	}
	slices.Sort(order)

	// The types a kind's spec reaches, through fields and inline embedding,
	// within a package and into api/common.
	inSpec := map[string]bool{}
	var reach func(dir string, e ast.Expr)
	reach = func(dir string, e ast.Expr) {
		switch e := e.(type) {
		case *ast.StarExpr:
			reach(dir, e.X)
		case *ast.ArrayType:
			reach(dir, e.Elt)
		case *ast.MapType:
			reach(dir, e.Value)
		case *ast.Ident:
			key := dir + "." + e.Name
			if st, ok := types[key]; ok && !inSpec[key] {
				inSpec[key] = true
				for _, f := range st.Fields.List {
					reach(dir, f.Type)
				}
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "commonv1" {
				reach(filepath.Join("common", "v1alpha1"), e.Sel)
			}
		}
	}
	for _, key := range order {
		dir, _, _ := strings.Cut(key, ".")
		for _, f := range types[key].Fields.List {
			if len(f.Names) == 1 && f.Names[0].Name == "Spec" {
				reach(dir, f.Type)
			}
		}
	}

	var out []field
	for _, key := range order {
		if strings.HasSuffix(key, "List") {
			continue // a list kind: TypeMeta, ListMeta and items, as Kubernetes' lists
		}
		_, typeName, _ := strings.Cut(key, ".")
		for _, f := range types[key].Fields.List {
			tag := ""
			if f.Tag != nil {
				tag, _ = strconv.Unquote(f.Tag.Value)
			}
			name, opts, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name == "" || name == "-" {
				continue // inline or not serialized: checked where declared
			}
			fd := field{
				pos:  fset.Position(f.Pos()),
				json: name,
				omit: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"),
				spec: inSpec[key],
			}
			goName := name
			if len(f.Names) > 0 {
				goName = f.Names[0].Name
			}
			fd.owner = typeName + "." + goName
			var doc []string
			if f.Doc != nil {
				for _, c := range f.Doc.List {
					line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
					switch {
					case line == "+optional":
						fd.optional = true
					case line == "+required":
						fd.required = true
					case strings.HasPrefix(line, "+"):
					default:
						doc = append(doc, line)
					}
				}
			}
			fd.doc = strings.Join(doc, " ")
			out = append(out, fd)
		}
	}
	return out
}
