package protocol

import (
	"fmt"
	"strings"
)

// What rpctap says about LSP frames beyond their rules (lsp.go): their
// summary in lists (a document and position, diagnostics, log lines,
// progress).

// Catalogue: LSP 3.17's methods (lsp.go's table).
func (lspProto) Catalogue() []string { return catalogueOf(lspMethods()) }

func (lspProto) Summarize(_ Dir, info Info, frame []byte) string {
	params := memberOf(frame, "params")
	switch info.Method {
	case "textDocument/publishDiagnostics":
		return count(memberOf(params, "diagnostics"), "diagnostic") + " " + base(str(memberOf(params, "uri")))
	case "window/logMessage", "window/showMessage":
		return quoteWords(str(memberOf(params, "message")))
	case "$/progress":
		v := memberOf(params, "value")
		return strings.TrimSpace(str(memberOf(v, "kind")) + " " + quoteWords(str(memberOf(v, "title"))+" "+str(memberOf(v, "message"))))
	case "initialize":
		if info.Kind == Response {
			if si := memberOf(memberOf(frame, "result"), "serverInfo"); si != nil {
				return str(memberOf(si, "name"))
			}
		}
	}
	// TextDocumentPositionParams and the other requests about a document.
	if td := memberOf(params, "textDocument"); td != nil {
		s := base(str(memberOf(td, "uri")))
		if pos := memberOf(params, "position"); pos != nil {
			s += fmt.Sprintf(":%s:%s", memberOf(pos, "line"), memberOf(pos, "character"))
		}
		return s
	}
	return ""
}
