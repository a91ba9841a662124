package protocol

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/redact"
)

// lspProto is the Language Server Protocol (3.17): JSON-RPC 2.0 framed by
// Content-Length headers; the parent is the client (an editor), the child
// the server. Both sides send requests (workspace/configuration,
// window/workDoneProgress/create come from the server), so ids are paired
// per direction. The sentences each rule enforces are quoted where the
// rule is; docs/protocols.md lists the codes.
type lspProto struct{}

func (lspProto) Name() string                      { return "lsp" }
func (lspProto) MaxFrame() int                     { return 0 }
func (lspProto) Framing() framing.Mode             { return framing.ContentLength }
func (lspProto) Classify(_ Dir, frame []byte) Info { return classifyRPC(frame) }

// Wire: the client's pid and version, the workspace's paths, progress
// tokens (any value the sender picks), log and message text (gopls stamps
// each line with the time) and the server's build string differ from run to
// run.
func (lspProto) Wire() Wire {
	return Wire{Style: StyleJSONRPC, RequestID: "id", ResponseID: "id", Volatile: []string{
		"/params/processId", "/params/clientInfo/version", "/params/rootUri", "/params/rootPath", "/params/workspaceFolders",
		"/params/token", "/params/workDoneToken", "/params/partialResultToken", "/params/message",
		"/result/serverInfo/version"},
		// gopls logs and reports progress as its goroutines run: how many
		// such lines a run writes, and where, differs between runs.
		Chatter: []string{"window/logMessage", "window/showMessage", "telemetry/event", "$/progress", "$/logTrace"}}
}

// NotSecret: LSP's progress tokens, "type ProgressToken = integer |
// string". $/progress carries "The progress token provided by the client or
// server", window/workDoneProgress/create "The token to be used to report
// progress" (and /cancel the same token); a request's workDoneToken and
// partialResultToken are ProgressTokens too. The sender picks it to pair
// reports with a request: a correlation id, never a credential. (Secret keys
// match whole names, so today only "token" needs this; the request members
// are listed so the list is the spec's, whatever keys are added later.)
func (lspProto) NotSecret() []redact.Field {
	return []redact.Field{
		{Method: "$/progress", Pointer: "/params/token"},
		{Method: "window/workDoneProgress/create", Pointer: "/params/token"},
		{Method: "window/workDoneProgress/cancel", Pointer: "/params/token"},
		{Pointer: "/params/workDoneToken"},
		{Pointer: "/params/partialResultToken"},
	}
}

// Handshake: "The initialize request is sent as the first request from the
// client to the server."
func (lspProto) HandshakeDir() Dir { return FromParent }
func (lspProto) IsHandshake(_ Dir, info Info) bool {
	return info.Kind == Request && info.Method == "initialize"
}

// CodeLSPUnknownMethod is info: servers and clients add methods of their own
// (gopls' commands, rust-analyzer/*), and "$/" methods are "protocol
// implementation dependent".
const CodeLSPUnknownMethod = "lsp.unknown-method"

// CodeLSPVoidParams: shutdown or exit carries a params member, {} or null
// or anything. LSP: "Shutdown Request ...
// params: void", "Exit Notification ... params: void": no params at all.
// Editors shipped `"params": {}` and `"params": null` on them (Zed, mcpls),
// and servers reject both (rust-analyzer, HLS, ty; tsgo, serve-d, Rome).
const CodeLSPVoidParams = "lsp.void-params"

func (lspProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	vs := validateRPCMethods(dir, frame, info, lspCatalogue, nil)
	for i := range vs {
		if vs[i].Code == CodeLSPUnknownMethod {
			vs[i].Severity = SevInfo
		}
	}
	if info.Kind == Request && info.Method == "shutdown" || info.Kind == Notification && info.Method == "exit" {
		if p := memberOf(frame, "params"); p != nil {
			// One finding, this one, rather than jsonrpc.null-params too.
			kept := vs[:0]
			for _, v := range vs {
				if v.Code != "jsonrpc.null-params" {
					kept = append(kept, v)
				}
			}
			vs = append(kept, Violation{Code: CodeLSPVoidParams, Severity: SevWarning, Pointer: "/params",
				Message: fmt.Sprintf(`LSP gives %s "params: void": send no params member; servers reject "params": %s`, info.Method, excerpt(p, 20))})
		}
	}
	return vs
}

// sniffLSP: an initialize whose params carry LSP's processId, rootUri,
// workspaceFolders or a textDocument capability is LSP for sure (MCP's and
// ACP's carry protocolVersion instead); LSP method names hint.
func sniffLSP(_ Dir, frame []byte) int { return sniffJSONRPC(frame, sniffLSPFrame) }

func sniffLSPFrame(m string, f *rpcFields) int {
	switch {
	case m == "initialize" && f.params != nil:
		if memberOf(f.params, "protocolVersion") != nil {
			return 0
		}
		if memberOf(f.params, "processId") != nil || memberOf(f.params, "rootUri") != nil ||
			memberOf(f.params, "workspaceFolders") != nil || memberOf(memberOf(f.params, "capabilities"), "textDocument") != nil {
			return sureScore
		}
		return 0
	case strings.HasPrefix(m, "textDocument/"), m == "$/cancelRequest", m == "$/progress", m == "window/logMessage",
		m == "window/workDoneProgress/create", m == "workspace/configuration", m == "workspace/didChangeConfiguration":
		return 80
	}
	if f.result != nil && memberOf(memberOf(f.result, "capabilities"), "textDocumentSync") != nil {
		return sureScore
	}
	return 0
}

func init() { register(lspProto{}, 20, sniffLSP) }

// ---- lifecycle ----

func (lspProto) NewLifecycle() Lifecycle { return &lspLife{tokens: map[string]lspProgress{}} }

// lspProgress is where a progress token is in its life.
type lspProgress uint8

const (
	progressCreated lspProgress = iota + 1
	progressBegun
	progressEnded
)

type lspLife struct {
	initSent, initAnswered, initializedSeen bool
	shutdownSent, exitSeen                  bool
	initToken                               string // the client's workDoneToken in initialize, "" for none
	tokens                                  map[string]lspProgress
}

// Lifecycle codes.
const (
	CodeLSPEarly           = "lsp.before-initialize-result"
	CodeLSPInitializedLate = "lsp.initialized-early"
	CodeLSPAfterShutdown   = "lsp.after-shutdown"
	CodeLSPAfterExit       = "lsp.after-exit"
	CodeLSPProgressToken   = "lsp.progress-unknown-token"
	CodeLSPProgressOrder   = "lsp.progress-order"
)

// serverDuringInit: "during the initialize request the server is allowed to
// send the notifications window/showMessage, window/logMessage and
// telemetry/event as well as the window/showMessageRequest request to the
// client" (and $/progress on the client's initialize workDoneToken).
var serverDuringInit = map[string]bool{"window/showMessage": true, "window/logMessage": true,
	"telemetry/event": true, "window/showMessageRequest": true}

func (l *lspLife) Frame(dir Dir, info Info, frame []byte) []Violation {
	var vs []Violation
	add := func(code string, sev Severity, format string, a ...any) {
		vs = append(vs, Violation{Code: code, Severity: sev, Message: fmt.Sprintf(format, a...)})
	}
	sends := info.Kind == Request || info.Kind == Notification
	if dir == FromParent {
		switch {
		case l.exitSeen:
			add(CodeLSPAfterExit, SevError, "the client sent %s after exit; the server has gone", describe(info))
		case l.shutdownSent && sends && info.Method != "exit":
			// "Clients must not send any notifications other than exit
			// or requests to a server to which they have sent a shutdown
			// request."
			add(CodeLSPAfterShutdown, SevError, "the client sent %s after its shutdown request; only exit may follow", describe(info))
		case info.Kind == Request && info.Method == "initialize":
			l.initSent = true
			if tok := nestedMember(frame, "params", "workDoneToken"); tok != nil {
				l.initToken = string(tok)
				l.tokens[l.initToken] = progressCreated
			}
		case info.Method == "initialized" && info.Kind == Notification:
			// "The initialized notification is sent from the client to the
			// server after the client received the result of the
			// initialize request" and "is sent only once".
			switch {
			case !l.initAnswered:
				add(CodeLSPInitializedLate, SevError, "initialized was sent before the client received initialize's result")
			case l.initializedSeen:
				add(CodeLSPInitializedLate, SevWarning, "a second initialized notification; it is sent only once")
			}
			l.initializedSeen = true
		case l.initSent && !l.initAnswered && sends && info.Method != "exit" && info.Method != "$/cancelRequest":
			// "Until the server has responded to the initialize request
			// with an InitializeResult, the client must not send any
			// additional requests or notifications to the server."
			add(CodeLSPEarly, SevError, "the client sent %s before the server answered initialize", describe(info))
		}
		switch {
		case info.Kind == Request && info.Method == "shutdown":
			l.shutdownSent = true
		case info.Kind == Notification && info.Method == "exit":
			l.exitSeen = true
		}
	} else {
		switch {
		case info.Kind == Response && info.Method == "initialize":
			l.initAnswered = !hasMember(frame, "error")
		case l.initSent && !l.initAnswered && sends && !serverDuringInit[info.Method] &&
			!(info.Method == "$/progress" && l.initToken != "" && string(nestedMember(frame, "params", "token")) == l.initToken):
			// "the server is not allowed to send any requests or
			// notifications to the client until it has responded with an
			// InitializeResult", with the exceptions of serverDuringInit.
			add(CodeLSPEarly, SevError, "the server sent %s before it answered initialize", describe(info))
		}
	}
	// Progress tokens: a client offers one in a request's workDoneToken or
	// partialResultToken; a server creates one with
	// window/workDoneProgress/create. WorkDoneProgress reports go begin,
	// report..., end.
	if info.Kind == Request {
		if info.Method == "window/workDoneProgress/create" {
			if tok := nestedMember(frame, "params", "token"); tok != nil {
				l.tokens[string(tok)] = progressCreated
			}
		} else {
			for _, k := range [...]string{"workDoneToken", "partialResultToken"} {
				if tok := nestedMember(frame, "params", k); tok != nil {
					l.tokens[string(tok)] = progressCreated
				}
			}
		}
	}
	if info.Kind == Notification && info.Method == "$/progress" {
		tok := string(nestedMember(frame, "params", "token"))
		st, known := l.tokens[tok]
		kind, _ := rawString(memberOf(nestedMember(frame, "params", "value"), "kind"))
		switch {
		case tok == "":
		case !known:
			add(CodeLSPProgressToken, SevWarning, "$/progress on token %s, which no request offered and no window/workDoneProgress/create created", excerpt([]byte(tok), 40))
		case kind == "begin" && st != progressCreated:
			add(CodeLSPProgressOrder, SevWarning, "$/progress begin on token %s, which already began", excerpt([]byte(tok), 40))
		case (kind == "report" || kind == "end") && st != progressBegun:
			add(CodeLSPProgressOrder, SevWarning, "$/progress %s on token %s before its begin", kind, excerpt([]byte(tok), 40))
		}
		switch kind {
		case "begin":
			l.tokens[tok] = progressBegun
		case "end":
			l.tokens[tok] = progressEnded
		}
	}
	return vs
}

func (l *lspLife) End() []Violation { return nil }

// ---- catalogue ----

var (
	lspURI         = jString
	lspPosition    = jPlain("Position", must("line", jUint(maxU32)), must("character", jUint(maxU32)))
	lspRange       = jPlain("Range", must("start", lspPosition), must("end", lspPosition))
	lspDocID       = jPlain("TextDocumentIdentifier", must("uri", lspURI))
	lspToken       = jAnyOf("ProgressToken", jInteger, jString)
	lspPositional  = jPlain("TextDocumentPositionParams", must("textDocument", lspDocID), must("position", lspPosition))
	lspDocParams   = jPlain("TextDocumentParams", must("textDocument", lspDocID))
	lspAnyParams   = jAnyObject
	lspMessageType = jUint(5)

	lspInitialize = jPlain("InitializeParams",
		must("processId", jNullable(jInteger)),
		must("capabilities", jAnyObject),
		may("clientInfo", jPlain("ClientInfo", must("name", jString), may("version", jString))),
		may("locale", jString),
		may("rootPath", jNullable(jString)),
		may("rootUri", jNullable(lspURI)),
		may("initializationOptions", jAnything),
		may("trace", jEnum("off", "messages", "verbose")),
		may("workspaceFolders", jNullable(jArrayOf(jPlain("WorkspaceFolder", must("uri", lspURI), must("name", jString))))),
		may("workDoneToken", lspToken))
	lspInitializeResult = jPlain("InitializeResult", must("capabilities", jAnyObject),
		may("serverInfo", jPlain("ServerInfo", must("name", jString), may("version", jString))))
)

type lspMethod struct {
	from  mcpFrom // who sends it (the direction type is shared with MCP's table)
	req   shape   // request params; nil for a notification
	notif shape   // notification params; nil for a request
	res   shape   // result, when checked
}

// Catalogue constructors, run at init: //go:noinline for the binary's
// size (see jUint in jsonrpc_shape.go).
//
//go:noinline
func lspReq(from mcpFrom, params shape) lspMethod { return lspMethod{from: from, req: params} }

//go:noinline
func lspNotif(from mcpFrom, params shape) lspMethod { return lspMethod{from: from, notif: params} }

//go:noinline
func lspClientReq(params shape) lspMethod { return lspReq(mcpFromClient, params) }

//go:noinline
func lspClientNotif(params shape) lspMethod { return lspNotif(mcpFromClient, params) }

//go:noinline
func lspServerReq(params shape) lspMethod { return lspReq(mcpFromServer, params) }

//go:noinline
func lspServerNotif(params shape) lspMethod  { return lspNotif(mcpFromServer, params) }
func (m lspMethod) result(s shape) lspMethod { m.res = s; return m }
func (m lspMethod) shapes() rpcMethodShapes {
	return rpcMethodShapes{req: m.req, notif: m.notif, result: m.res, allowed: m.from.allows, side: m.from.String()}
}
func lspVoid() shape              { return jAnything }
func lspPositionalReq() lspMethod { return lspClientReq(lspPositional) }
func lspDocReq() lspMethod        { return lspClientReq(lspDocParams) }

//go:noinline
func lspObjNotif(from mcpFrom) lspMethod { return lspNotif(from, lspAnyParams) }
func lspResolve() lspMethod              { return lspClientReq(jAnyObject) }
func lspRefresh() lspMethod              { return lspServerReq(lspVoid()) }

type lspEntry struct {
	name string
	m    lspMethod
}

func lspEntries(names []string, m lspMethod) []lspEntry {
	out := make([]lspEntry, len(names))
	for i, n := range names {
		out[i] = lspEntry{n, m}
	}
	return out
}

// lspMethods is LSP 3.17's method table (the specification's "Overview"
// of messages), with params shapes for the messages sessions always carry.
var lspMethods = sync.OnceValue(func() map[string]lspMethod {
	m := map[string]lspMethod{
		"initialize":  lspClientReq(lspInitialize).result(lspInitializeResult),
		"initialized": lspClientNotif(jAnyObject),
		"shutdown":    lspClientReq(lspVoid()),
		"exit":        lspClientNotif(lspVoid()),
		"textDocument/didOpen": lspClientNotif(jPlain("DidOpenTextDocumentParams", must("textDocument", jPlain("TextDocumentItem",
			must("uri", lspURI), must("languageId", jString), must("version", jInteger), must("text", jString))))),
		"textDocument/didChange": lspClientNotif(jPlain("DidChangeTextDocumentParams",
			must("textDocument", jPlain("VersionedTextDocumentIdentifier", must("uri", lspURI), must("version", jInteger))),
			must("contentChanges", jAnyArray))),
		"textDocument/didClose": lspClientNotif(lspDocParams),
		"textDocument/didSave":  lspClientNotif(lspDocParams),
		"textDocument/willSave": lspClientNotif(lspDocParams),
		"$/cancelRequest":       lspNotif(mcpFromEither, jPlain("CancelParams", must("id", jAnyOf("integer or string", jInteger, jString)))),
		"$/progress":            lspNotif(mcpFromEither, jPlain("ProgressParams", must("token", lspToken), must("value", jAnything))),
		"$/setTrace":            lspClientNotif(jPlain("SetTraceParams", must("value", jEnum("off", "messages", "verbose")))),
		"$/logTrace":            lspServerNotif(jPlain("LogTraceParams", must("message", jString))),
		"window/logMessage":     lspServerNotif(jPlain("LogMessageParams", must("type", lspMessageType), must("message", jString))),
		"window/showMessage":    lspServerNotif(jPlain("ShowMessageParams", must("type", lspMessageType), must("message", jString))),
		"window/showMessageRequest": lspServerReq(jPlain("ShowMessageRequestParams", must("type", lspMessageType), must("message", jString),
			may("actions", jArrayOf(jPlain("MessageActionItem", must("title", jString)))))),
		"window/showDocument":            lspServerReq(jPlain("ShowDocumentParams", must("uri", lspURI))),
		"window/workDoneProgress/create": lspServerReq(jPlain("WorkDoneProgressCreateParams", must("token", lspToken))),
		"window/workDoneProgress/cancel": lspClientNotif(jPlain("WorkDoneProgressCancelParams", must("token", lspToken))),
		"telemetry/event":                lspServerNotif(jAnything),
		"textDocument/publishDiagnostics": lspServerNotif(jPlain("PublishDiagnosticsParams", must("uri", lspURI), may("version", jInteger),
			must("diagnostics", jArrayOf(jPlain("Diagnostic", must("range", lspRange), must("message", jString), may("severity", jUint(4))))))),
		"workspace/configuration":     lspServerReq(jPlain("ConfigurationParams", must("items", jAnyArray))),
		"workspace/workspaceFolders":  lspServerReq(lspVoid()),
		"workspace/applyEdit":         lspServerReq(jPlain("ApplyWorkspaceEditParams", must("edit", jAnyObject))),
		"client/registerCapability":   lspServerReq(jPlain("RegistrationParams", must("registrations", jAnyArray))),
		"client/unregisterCapability": lspServerReq(jPlain("UnregistrationParams", must("unregisterations", jAnyArray))),
		"workspace/symbol":            lspClientReq(jPlain("WorkspaceSymbolParams", must("query", jString))),
		"workspace/executeCommand":    lspClientReq(jPlain("ExecuteCommandParams", must("command", jString), may("arguments", jAnyArray))),
	}
	var more []lspEntry
	more = append(more, lspEntries([]string{"textDocument/hover", "textDocument/definition", "textDocument/declaration",
		"textDocument/typeDefinition", "textDocument/implementation", "textDocument/references", "textDocument/documentHighlight",
		"textDocument/completion", "textDocument/signatureHelp", "textDocument/prepareRename", "textDocument/rename",
		"textDocument/linkedEditingRange", "textDocument/moniker", "textDocument/prepareCallHierarchy",
		"textDocument/prepareTypeHierarchy", "textDocument/onTypeFormatting"}, lspPositionalReq())...)
	more = append(more, lspEntries([]string{"textDocument/documentSymbol", "textDocument/codeAction", "textDocument/codeLens",
		"textDocument/documentLink", "textDocument/formatting", "textDocument/rangeFormatting", "textDocument/rangesFormatting",
		"textDocument/foldingRange", "textDocument/selectionRange", "textDocument/semanticTokens/full",
		"textDocument/semanticTokens/full/delta", "textDocument/semanticTokens/range", "textDocument/inlayHint",
		"textDocument/inlineValue", "textDocument/diagnostic", "textDocument/documentColor", "textDocument/colorPresentation",
		"textDocument/willSaveWaitUntil"}, lspDocReq())...)
	more = append(more, lspEntries([]string{"callHierarchy/incomingCalls", "callHierarchy/outgoingCalls", "typeHierarchy/supertypes",
		"typeHierarchy/subtypes", "workspace/willCreateFiles", "workspace/willRenameFiles", "workspace/willDeleteFiles",
		"workspace/diagnostic", "completionItem/resolve", "codeAction/resolve", "codeLens/resolve", "documentLink/resolve",
		"inlayHint/resolve", "workspaceSymbol/resolve"}, lspResolve())...)
	more = append(more, lspEntries([]string{"workspace/codeLens/refresh", "workspace/semanticTokens/refresh",
		"workspace/inlayHint/refresh", "workspace/inlineValue/refresh", "workspace/diagnostic/refresh",
		"workspace/foldingRange/refresh"}, lspRefresh())...)
	more = append(more, lspEntries([]string{"workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles",
		"workspace/didChangeWorkspaceFolders", "workspace/didCreateFiles", "workspace/didRenameFiles", "workspace/didDeleteFiles",
		"notebookDocument/didOpen", "notebookDocument/didChange", "notebookDocument/didSave", "notebookDocument/didClose"},
		lspObjNotif(mcpFromClient))...)
	for _, e := range more {
		m[e.name] = e.m
	}
	return m
})

var lspCatalogue = rpcCatalogue{
	prefix: "lsp",
	lookup: func(name string) (rpcMethodShapes, bool) {
		m, ok := lspMethods()[name]
		return m.shapes(), ok
	},
}
