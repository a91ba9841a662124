package protocol

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// memberArgs are the helpers whose string arguments (and everything inside
// them) name JSON members, enum values or the variants of a nested tagged
// object, not messages: "cancel" as the action of an elicitation result is
// not DAP's cancel request.
var memberArgs = map[string]bool{
	"memberOf": true, "memberOfIn": true, "nestedMember": true, "nestedTop": true, "firstMember": true,
	"hasMember": true, "streamEventSummary": true, "commandOutcome": true, "pickMembers": true,
	"req": true, "opt": true, "optNull": true, "reqNull": true, "must": true, "may": true,
	"tEnum": true, "jEnum": true, "tTagged": true, "jTagged": true,
}

// sharedWords are names rpctap itself uses beyond any one protocol, which
// some protocols' catalogues happen to share: the kinds of frames (Kind:
// DAP's and synaps's envelopes say "request", "response", "event") and the
// members of JSON-RPC 2.0's envelope ("error" is also synaps's and
// brainwires's error event). The test cannot tell these uses apart, so it
// leaves them out.
func sharedWords() map[string]bool {
	w := map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}
	for _, k := range []Kind{Request, Response, Notification, Event, Handshake, Invalid} {
		w[string(k)] = true
	}
	return w
}

// literalNames returns the string literals of a Go file that could name a
// message: not struct tags, import paths or member names passed to the
// helpers above.
func literalNames(t *testing.T, path string) map[string][]token.Position {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	skip := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ImportSpec:
			skip[x.Path] = true
		case *ast.IndexExpr:
			// m["key"]: a member of a map the file builds.
			if l, ok := x.Index.(*ast.BasicLit); ok {
				skip[l] = true
			}
		case *ast.Field:
			if x.Tag != nil {
				skip[x.Tag] = true
			}
		case *ast.CallExpr:
			name := ""
			switch fn := x.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if memberArgs[name] {
				for _, a := range x.Args {
					ast.Inspect(a, func(n ast.Node) bool {
						if l, ok := n.(*ast.BasicLit); ok {
							skip[l] = true
						}
						return true
					})
				}
			}
		}
		return true
	})
	out := map[string][]token.Position{}
	ast.Inspect(f, func(n ast.Node) bool {
		l, ok := n.(*ast.BasicLit)
		if !ok || l.Kind != token.STRING || skip[l] {
			return true
		}
		if s, err := strconv.Unquote(l.Value); err == nil {
			out[s] = append(out[s], fset.Position(l.Pos()))
		}
		return true
	})
	return out
}

// ownerOf is the protocol a file of this package belongs to (NAME.go and
// NAME_*.go), "" for the shared files.
func ownerOf(file string, names []string) string {
	base := strings.TrimSuffix(filepath.Base(file), ".go")
	owner := ""
	for _, n := range names {
		if (base == n || strings.HasPrefix(base, n+"_")) && len(n) > len(owner) {
			owner = n
		}
	}
	return owner
}

// misnamed lists where files name messages outside their own catalogue:
// owner gives a file's protocol ("" for a shared file).
func misnamed(t *testing.T, files []string, owner func(file string) string) []string {
	t.Helper()
	catalogue := map[string]map[string]bool{}
	all := map[string][]string{} // message name -> the protocols whose catalogue has it
	shared := sharedWords()
	for _, n := range Names() {
		catalogue[n] = map[string]bool{}
		c, ok := lookupKnown(n).(Cataloguer)
		if !ok {
			continue
		}
		for _, m := range c.Catalogue() {
			catalogue[n][m] = true
			all[m] = append(all[m], n)
		}
	}
	for _, n := range []string{"acp", "mcp", "lsp", "dap", "synaps", "opi", "pi", "brainwires"} {
		if len(catalogue[n]) == 0 {
			t.Fatalf("protocol %s has no catalogue", n)
		}
	}
	var out []string
	for _, file := range files {
		o := owner(file)
		for lit, at := range literalNames(t, file) {
			ps := all[lit]
			if len(ps) == 0 || catalogue[o][lit] || shared[lit] {
				continue
			}
			sort.Strings(ps)
			where := "a shared file"
			if o != "" {
				where = "a file of " + o
			}
			out = append(out, fmt.Sprintf("%s: %s names %q, a message of %s", at[0], where, lit, strings.Join(ps, ", ")))
		}
	}
	sort.Strings(out)
	return out
}

// TestProtocolFilesNameOwnMethods enforces issue 22's rule: the shared
// files of protocol/ and internal/export name no protocol's method or event
// (a name several protocols share, like "initialize", belongs to each
// protocol's own file), and each protocol's files (NAME.go, NAME_*.go) name
// only methods of their own catalogue (Cataloguer).
func TestProtocolFilesNameOwnMethods(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	exp, _ := filepath.Glob(filepath.Join("..", "internal", "export", "*.go"))
	var src []string
	for _, f := range append(files, exp...) {
		if !strings.HasSuffix(f, "_test.go") {
			src = append(src, f)
		}
	}
	if len(src) < 30 {
		t.Fatalf("found %d source files; is the test running in protocol/?", len(src))
	}
	owner := func(file string) string {
		if filepath.Dir(file) != "." {
			return ""
		}
		return ownerOf(file, Names())
	}
	for _, m := range misnamed(t, src, owner) {
		t.Error(m)
	}

	// The check finds what it is for: a shared file that switches on ACP's
	// session/update, an MCP file that names LSP's publishDiagnostics.
	dir := t.TempDir()
	planted := filepath.Join(dir, "summary.go")
	os.WriteFile(planted, []byte("package protocol\n\nfunc f(m string) bool {\n\tswitch m {\n\tcase \"session/update\":\n\t\treturn memberOf(nil, \"textDocument/hover\") != nil\n\t}\n\treturn m == \"textDocument/publishDiagnostics\"\n}\n"), 0o644)
	got := misnamed(t, []string{planted}, func(string) string { return "" })
	if len(got) != 2 || !strings.Contains(got[0], `"session/update", a message of acp`) || !strings.Contains(got[1], `"textDocument/publishDiagnostics", a message of lsp`) {
		t.Errorf("planted shared file: got %q", got)
	}
	got = misnamed(t, []string{planted}, func(string) string { return "mcp" })
	if len(got) != 2 {
		t.Errorf("planted as an MCP file: got %q", got)
	}
	if got = misnamed(t, []string{planted}, func(string) string { return "lsp" }); len(got) != 1 {
		t.Errorf("planted as an LSP file (its own publishDiagnostics allowed): got %q", got)
	}
}

// TestSharedFilesUseNoProtocolIdentifiers: what the literal scan above
// cannot see. A shared file, or the generic JSON-RPC protocol's, that uses
// a protocol's own declarations by name (acpMethods, mcpProto, ...) knows
// that protocol as surely as one that spells its method names: adding a
// protocol would mean editing it. Helpers that only happen to live in a
// protocol's file (memberOf, req) are not named after a protocol and stay
// out of this rule; so do protocols that build on a relative's (pi's
// detection tells it from opi and synaps by their tables, LSP reuses MCP's
// direction type).
func TestSharedFilesUseNoProtocolIdentifiers(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	exp, _ := filepath.Glob(filepath.Join("..", "internal", "export", "*.go"))
	names := Names()
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	declared := map[string]string{} // identifier -> the protocol whose files declare it
	for _, f := range append(files, exp...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed[f] = pf
		o := ""
		if filepath.Dir(f) == "." {
			o = ownerOf(f, names)
		}
		if o == "" {
			continue
		}
		for _, d := range pf.Decls {
			var ids []*ast.Ident
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					ids = append(ids, d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						ids = append(ids, s.Names...)
					case *ast.TypeSpec:
						ids = append(ids, s.Name)
					}
				}
			}
			for _, id := range ids {
				if strings.HasPrefix(strings.ToLower(id.Name), o) {
					declared[id.Name] = o
				}
			}
		}
	}
	if declared["acpMethods"] != "acp" || declared["mcpProto"] != "mcp" {
		t.Fatalf("the scan missed acpMethods or mcpProto: %v", declared)
	}
	var bad []string
	for f, pf := range parsed {
		o := ""
		if filepath.Dir(f) == "." {
			o = ownerOf(f, names)
		}
		ast.Inspect(pf, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			if p, ok := declared[id.Name]; ok && p != o && (o == "" || o == "jsonrpc") {
				where := "a shared file"
				if o != "" {
					where = "a file of " + o
				}
				bad = append(bad, fmt.Sprintf("%s: %s uses %s, declared by %s", fset.Position(id.Pos()), where, id.Name, p))
			}
			return true
		})
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
