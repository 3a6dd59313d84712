// Command msgpackgen writes msgpack_methods_gen.go of package wire: the
// msgpack.CustomEncoder and CustomDecoder methods of every message struct.
//
// Run it with `go generate ./wire/` (the go:generate line is in
// msgpack_codec.go). It reads the package's own source with go/parser: every
// struct whose first field is the as_array marker (_msgpack struct{} tagged
// msgpack:",as_array") gets, for its exported fields in declaration order,
//
//   - a field table (fooFields), the names in wire order;
//   - EncodeMsgpack and DecodeMsgpack, with the reflectCodec switch;
//   - writeTo, which writes the fields with the writer of msgpack_codec.go;
//   - decodeField, which decodes the i-th field;
//   - a method-less copy of the type (fooReflect) for reflectCodec.
//
// The methods used to be written by hand, one near-identical run of four
// methods per struct, and every change to a struct in msg.go meant editing
// four places consistently. Generated from the struct definitions they cannot
// fall out of step with them; the rules they follow (what msgpack's reflection
// writes and accepts) stay in the hand-written helpers of msgpack_codec.go,
// and the tests still hold the result to reflection byte for byte.
//
// A method the package already declares by hand in another file is not
// generated: that is how a type keeps logic the field list cannot express
// (see msgpack_handwritten.go). A field of a type the generator does not know,
// or with a struct tag, stops it with an error rather than guessing an
// encoding.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// output is the file written, in the package directory.
const output = "msgpack_methods_gen.go"

func main() {
	log.SetFlags(0)
	log.SetPrefix("msgpackgen: ")
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	src, err := generate(dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, output), src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// structType is one message struct, as the template sees it.
type structType struct {
	Name   string
	Fields []field
	// Hand names the methods declared by hand, which are not generated.
	Hand map[string]bool
}

// field is one exported field and the code that writes and decodes it.
type field struct {
	Name   string
	Encode string // a statement writing r.Name with w
	Decode string // a statement decoding into r.Name with d, setting err
}

// lowerFirst turns a type name into the prefix of its field table and copy.
func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// generate parses the package in dir and returns the generated file.
func generate(dir string) ([]byte, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var (
		pkg     string
		order   []string                       // message structs in declaration order
		structs = map[string]*ast.StructType{} // by type name
		hand    = map[string]map[string]bool{} // receiver type → methods declared by hand
	)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == output {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		pkg = f.Name.Name
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok && isMessage(st) {
							order = append(order, ts.Name.Name)
							structs[ts.Name.Name] = st
						}
					}
				}
			case *ast.FuncDecl:
				if recv := receiverName(decl); recv != "" {
					if hand[recv] == nil {
						hand[recv] = map[string]bool{}
					}
					hand[recv][decl.Name.Name] = true
				}
			}
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no message structs in %s", dir)
	}
	var types []structType
	for _, name := range order {
		t := structType{Name: name, Hand: hand[name]}
		for _, f := range structs[name].Fields.List[1:] { // [0] is the marker
			if len(f.Names) == 0 {
				return nil, fmt.Errorf("%s: embedded field in %s: not supported", fset.Position(f.Pos()), name)
			}
			if f.Tag != nil {
				return nil, fmt.Errorf("%s: %s.%s has a struct tag: not supported", fset.Position(f.Pos()), name, f.Names[0].Name)
			}
			for _, id := range f.Names {
				if !id.IsExported() {
					continue // msgpack's reflection skips it too
				}
				enc, dec, err := codeFor(f.Type, structs)
				if err != nil {
					return nil, fmt.Errorf("%s: %s.%s: %w", fset.Position(id.Pos()), name, id.Name, err)
				}
				ref := "m." + id.Name
				t.Fields = append(t.Fields, field{
					Name:   id.Name,
					Encode: strings.ReplaceAll(enc, "$", ref),
					Decode: strings.ReplaceAll(dec, "$", ref),
				})
			}
		}
		types = append(types, t)
	}
	var buf bytes.Buffer
	if err := fileTemplate.Execute(&buf, struct {
		Package string
		Types   []structType
	}{pkg, types}); err != nil {
		return nil, err
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the output: %w\n%s", err, buf.Bytes())
	}
	return src, nil
}

// isMessage reports whether st starts with the as_array marker.
func isMessage(st *ast.StructType) bool {
	if len(st.Fields.List) == 0 {
		return false
	}
	f := st.Fields.List[0]
	if len(f.Names) != 1 || f.Names[0].Name != "_msgpack" || f.Tag == nil {
		return false
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	return err == nil && reflect.StructTag(tag).Get("msgpack") == ",as_array"
}

// receiverName returns the type name of a method's receiver, "" for a function.
func receiverName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// scalars are the field types written by one writer method and read by one
// Decoder method: what reflection writes for them under the wire encoder's
// options (see msgpack_codec.go). $ stands for the field.
var scalars = map[string][2]string{
	"string":            {"w.str($)", "$, err = d.DecodeString()"},
	"bool":              {"w.boolean($)", "$, err = d.DecodeBool()"},
	"int":               {"w.int(int64($))", "$, err = d.DecodeInt()"},
	"int64":             {"w.int($)", "$, err = d.DecodeInt64()"},
	"uint32":            {"w.uint(uint64($))", "$, err = d.DecodeUint32()"},
	"uint64":            {"w.uint($)", "$, err = d.DecodeUint64()"},
	"[]string":          {"w.strs($)", "err = d.Decode(&$)"},
	"map[string]string": {"w.strMap($)", "err = d.Decode(&$)"},
}

// codeFor returns the statements that write and decode a field of type t
// ($ for the field): a scalar, or a message struct, a pointer to one or a
// slice of them.
func codeFor(t ast.Expr, structs map[string]*ast.StructType) (enc, dec string, err error) {
	var b bytes.Buffer
	if err := format.Node(&b, token.NewFileSet(), t); err != nil {
		return "", "", err
	}
	typ := b.String()
	if code, ok := scalars[typ]; ok {
		return code[0], code[1], nil
	}
	elem, shape := typ, ""
	for _, prefix := range []string{"*", "[]"} {
		if rest, ok := strings.CutPrefix(typ, prefix); ok {
			elem, shape = rest, prefix
		}
	}
	if structs[elem] == nil {
		return "", "", errors.New("type " + typ + " is not supported: teach msgpackgen how reflection encodes it")
	}
	table := lowerFirst(elem) + "Fields[:]"
	switch shape {
	case "*":
		return "if $ == nil {\nw.null()\n} else {\n$.writeTo(w)\n}", "err = decodePointer(d, &$, " + table + ")", nil
	case "[]":
		return "writeStructs(w, $)", "err = decodeStructs(d, &$, " + table + ")", nil
	}
	return "$.writeTo(w)", "err = decodeStruct(d, &$, " + table + ")", nil
}

var fileTemplate = template.Must(template.New("").Funcs(template.FuncMap{
	"lower": lowerFirst,
	"quote": strconv.Quote,
}).Parse(`// Code generated by msgpackgen (wire/internal/msgpackgen); DO NOT EDIT.

package {{.Package}}

import "github.com/vmihailenco/msgpack/v5"

// The msgpack methods of every message struct, generated from msg.go (see
// msgpack_codec.go for the rules they follow and msgpack_handwritten.go for
// the methods kept by hand). A change to a struct means running
// ` + "`go generate ./wire/`" + ` (and bumping ProtocolVersion).

// Method-less copies of the message types, for reflectCodec.
type (
{{- range .Types}}
	{{lower .Name}}Reflect {{.Name}}
{{- end}}
)

// Every message struct has both methods.
var (
{{- range .Types}}
	_ msgpack.CustomEncoder = {{.Name}}{}
	_ msgpack.CustomDecoder = (*{{.Name}})(nil)
{{- end}}
)
{{range .Types}}{{$t := .}}{{$fields := print (lower .Name) "Fields"}}
// {{$fields}} names the fields of {{.Name}}, in wire order.
var {{$fields}} = [...]string{
{{- range .Fields}}
	{{quote .Name}},
{{- end}}
}
{{if not (index .Hand "EncodeMsgpack")}}
// EncodeMsgpack implements msgpack.CustomEncoder.
func (m {{.Name}}) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := {{lower .Name}}Reflect(m)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	m.writeTo(&w)
	return w.err
}
{{end}}{{if not (index .Hand "DecodeMsgpack")}}
// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *{{.Name}}) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*{{lower .Name}}Reflect)(m))
	}
	return decodeStruct(d, m, {{$fields}}[:])
}
{{end}}{{if not (index .Hand "writeTo")}}
// writeTo encodes m as the array of its fields.
func (m *{{.Name}}) writeTo(w *writer) {
	w.arrayLen(len({{$fields}}))
{{- range .Fields}}
	{{.Encode}}
{{- end}}
}
{{end}}{{if not (index .Hand "decodeField")}}
// decodeField decodes field i of m (readable).
func (m *{{.Name}}) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
{{- range $i, $f := .Fields}}
	case {{$i}}:
		{{$f.Decode}}
{{- end}}
	}
	return err
}
{{end}}{{end}}`))
