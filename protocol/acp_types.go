package protocol

import "sync"

// ACP message shapes, written from the catalogue ../shared/protocols/acp.md
// and the upstream schema (v0.10.3 and v0.13.0, stable and unstable; v0.13.0
// is a superset). Names follow the upstream type names.

// acpMethod is one ACP method: who handles it and the shapes of its params
// and result. A method may exist as a request, a notification, or both
// (mcp/message).
type acpMethod struct {
	side   acpSide
	req    shape // request params; nil if the method is not a request
	result shape // response result
	notif  shape // notification params; nil if not a notification
}

type acpSide uint8

const (
	acpAgentSide  acpSide = iota // handled by the agent: sent by the client (the parent)
	acpClientSide                // handled by the client: sent by the agent (the child)
	acpBothSides                 // either direction ($/cancel_request, mcp/message)
)

func (s acpSide) allows(dir Dir) bool {
	switch s {
	case acpAgentSide:
		return dir == FromParent
	case acpClientSide:
		return dir == FromChild
	}
	return true
}

// Catalogue constructors, run at init: //go:noinline for the binary's
// size (see jUint in jsonrpc_shape.go).
//
//go:noinline
func acpReq(side acpSide, params, result shape) acpMethod {
	return acpMethod{side: side, req: params, result: result}
}

//go:noinline
func acpNotif(side acpSide, params shape) acpMethod { return acpMethod{side: side, notif: params} }

// acpMethods is the catalogue, built on first use: built at init, it ran
// in every rpctap process (the tap and sink of every recording, --version),
// most of which never judge a frame of this protocol.
var acpMethods = sync.OnceValue(buildAcpMethods)

func buildAcpMethods() map[string]acpMethod {
	var (
		acpSessionID = jString
		acpStrOrNull = jNullable(jString)
		acpStrings   = jArrayOf(jString)

		acpRequestID = jAnyOf("RequestId", jNullable(jInteger), jString)

		acpAnnotations = jNullable(jObj("Annotations",
			may("audience", jNullable(jArrayOf(jEnum("assistant", "user")))),
			may("lastModified", acpStrOrNull),
			may("priority", jNullable(jNumber)),
		))

		acpTextResource = jObj("TextResourceContents", may("mimeType", acpStrOrNull), must("text", jString), must("uri", jString))
		acpBlobResource = jObj("BlobResourceContents", must("blob", jString), may("mimeType", acpStrOrNull), must("uri", jString))

		acpContentBlock = jTagged("ContentBlock", "type", map[string]shape{
			"text":  jObj("TextContent", may("annotations", acpAnnotations), must("text", jString)),
			"image": jObj("ImageContent", may("annotations", acpAnnotations), must("data", jString), must("mimeType", jString), may("uri", acpStrOrNull)),
			"audio": jObj("AudioContent", may("annotations", acpAnnotations), must("data", jString), must("mimeType", jString)),
			"resource_link": jObj("ResourceLink", may("annotations", acpAnnotations), may("description", acpStrOrNull),
				may("mimeType", acpStrOrNull), must("name", jString), may("size", jNullable(jInteger)), may("title", acpStrOrNull), must("uri", jString)),
			"resource": jObj("EmbeddedResource", may("annotations", acpAnnotations),
				must("resource", jAnyOf("EmbeddedResourceResource", acpTextResource, acpBlobResource))),
		})

		acpToolKind       = jEnum("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
		acpToolCallStatus = jEnum("pending", "in_progress", "completed", "failed")
		acpStopReason     = jEnum("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")

		acpToolCallContent = jTagged("ToolCallContent", "type", map[string]shape{
			"content":  jObj("Content", must("content", acpContentBlock)),
			"diff":     jObj("Diff", must("newText", jString), may("oldText", acpStrOrNull), must("path", jString)),
			"terminal": jObj("Terminal", must("terminalId", jString)),
		})
		acpToolCallLocation = jObj("ToolCallLocation", may("line", jNullable(jUint(maxU32))), must("path", jString))

		acpToolCallUpdateFields = []field{
			may("content", jNullable(jArrayOf(acpToolCallContent))),
			may("kind", jNullable(acpToolKind)),
			may("locations", jNullable(jArrayOf(acpToolCallLocation))),
			may("status", jNullable(acpToolCallStatus)),
			may("title", acpStrOrNull),
			must("toolCallId", jString),
		}
		acpToolCallUpdate = jObj("ToolCallUpdate", acpToolCallUpdateFields...)
		acpToolCall       = jObj("ToolCall",
			may("content", jArrayOf(acpToolCallContent)),
			may("kind", acpToolKind),
			may("locations", jArrayOf(acpToolCallLocation)),
			may("status", acpToolCallStatus),
			must("title", jString),
			must("toolCallId", jString),
		)

		acpContentChunk = jObj("ContentChunk", must("content", acpContentBlock), may("messageId", acpStrOrNull))

		acpSessionConfigSelectOption = jObj("SessionConfigSelectOption", may("description", acpStrOrNull), must("name", jString), must("value", jString))
		acpSessionConfigOption       = jObj("SessionConfigOption",
			may("category", jNullable(jString)), // known: mode, model, thought_level; others allowed
			may("description", acpStrOrNull),
			must("id", jString),
			must("name", jString),
		).with(jTagged("SessionConfigOption", "type", map[string]shape{
			"select": jPlain("SessionConfigSelect", must("currentValue", jString), must("options", jAnyOf("SessionConfigSelectOptions",
				jArrayOf(acpSessionConfigSelectOption),
				jArrayOf(jObj("SessionConfigSelectGroup", must("group", jString), must("name", jString), must("options", jArrayOf(acpSessionConfigSelectOption)))),
			))),
			"boolean": jPlain("SessionConfigBoolean", must("currentValue", jBoolean)),
		}))

		acpSessionUpdate = jTagged("SessionUpdate", "sessionUpdate", map[string]shape{
			"user_message_chunk":  acpContentChunk,
			"agent_message_chunk": acpContentChunk,
			"agent_thought_chunk": acpContentChunk,
			"tool_call":           acpToolCall,
			"tool_call_update":    acpToolCallUpdate,
			"plan": jObj("Plan", must("entries", jArrayOf(jObj("PlanEntry",
				must("content", jString),
				must("priority", jEnum("high", "medium", "low")),
				must("status", jEnum("pending", "in_progress", "completed")),
			)))),
			"available_commands_update": jObj("AvailableCommandsUpdate", must("availableCommands", jArrayOf(jObj("AvailableCommand",
				must("description", jString),
				may("input", jNullable(jAnyOf("AvailableCommandInput", jObj("UnstructuredCommandInput", must("hint", jString))))),
				must("name", jString),
			)))),
			"current_mode_update":  jObj("CurrentModeUpdate", must("currentModeId", jString)),
			"config_option_update": jObj("ConfigOptionUpdate", must("configOptions", jArrayOf(acpSessionConfigOption))),
			"session_info_update":  jObj("SessionInfoUpdate", may("title", acpStrOrNull), may("updatedAt", acpStrOrNull)),
			"usage_update": jObj("UsageUpdate",
				may("cost", jNullable(jPlain("Cost", must("amount", jNumber), must("currency", jString)))),
				must("size", jUint(maxU64)), must("used", jUint(maxU64))),
		})

		acpEnvVariable = jObj("EnvVariable", must("name", jString), must("value", jString))
		acpHTTPHeader  = jObj("HttpHeader", must("name", jString), must("value", jString))
		acpMcpServer   = jAnyOf("McpServer",
			jObj("McpServerHttp", must("type", constShape("http")), must("headers", jArrayOf(acpHTTPHeader)), must("name", jString), must("url", jString)),
			jObj("McpServerSse", must("type", constShape("sse")), must("headers", jArrayOf(acpHTTPHeader)), must("name", jString), must("url", jString)),
			jObj("McpServerAcp", must("type", constShape("acp")), must("id", jString), must("name", jString)),
			jObj("McpServerStdio", must("args", acpStrings), must("command", jString), must("env", jArrayOf(acpEnvVariable)), must("name", jString)),
		)

		acpImplementation = jObj("Implementation", must("name", jString), may("title", acpStrOrNull), must("version", jString))
		acpProtocolVer    = jUint(maxU16)

		acpClientCapabilities = jObj("ClientCapabilities",
			may("auth", jObj("AuthCapabilities", may("terminal", jBoolean))),
			may("elicitation", jNullable(jObj("ElicitationCapabilities", may("form", jNullable(jObj(""))), may("url", jNullable(jObj("")))))),
			may("fs", jObj("FileSystemCapabilities", may("readTextFile", jBoolean), may("writeTextFile", jBoolean))),
			may("nes", jNullable(jAnyObject)),
			may("positionEncodings", jArrayOf(jEnum("utf-16", "utf-32", "utf-8"))),
			may("terminal", jBoolean),
		)
		acpAgentCapabilities = jObj("AgentCapabilities",
			may("auth", jObj("AgentAuthCapabilities", may("logout", jNullable(jObj(""))))),
			may("loadSession", jBoolean),
			may("mcpCapabilities", jObj("McpCapabilities", may("acp", jBoolean), may("http", jBoolean), may("sse", jBoolean))),
			may("nes", jNullable(jAnyObject)),
			may("positionEncoding", jNullable(jEnum("utf-16", "utf-32", "utf-8"))),
			may("promptCapabilities", jObj("PromptCapabilities", may("audio", jBoolean), may("embeddedContext", jBoolean), may("image", jBoolean))),
			may("providers", jNullable(jObj(""))),
			may("sessionCapabilities", jObj("SessionCapabilities",
				may("additionalDirectories", jNullable(jObj(""))), may("close", jNullable(jObj(""))), may("fork", jNullable(jObj(""))),
				may("list", jNullable(jObj(""))), may("resume", jNullable(jObj(""))))),
		)
		acpAuthMethod = jAnyOf("AuthMethod",
			jObj("AuthMethodEnvVar", must("type", constShape("env_var")), may("description", acpStrOrNull), must("id", jString),
				may("link", acpStrOrNull), must("name", jString), must("vars", jArrayOf(jObj("AuthEnvVar",
					may("label", acpStrOrNull), must("name", jString), may("optional", jBoolean), may("secret", jBoolean))))),
			jObj("AuthMethodTerminal", must("type", constShape("terminal")), may("args", acpStrings), may("description", acpStrOrNull),
				may("env", jAnyObject), must("id", jString), must("name", jString)),
			jObj("AuthMethodAgent", may("description", acpStrOrNull), must("id", jString), must("name", jString)),
		)

		acpSessionModeState = jNullable(jObj("SessionModeState",
			must("availableModes", jArrayOf(jObj("SessionMode", may("description", acpStrOrNull), must("id", jString), must("name", jString)))),
			must("currentModeId", jString)))
		acpSessionModelState = jNullable(jObj("SessionModelState",
			must("availableModels", jArrayOf(jObj("ModelInfo", may("description", acpStrOrNull), must("modelId", jString), must("name", jString)))),
			must("currentModelId", jString)))
		acpConfigOptions = jNullable(jArrayOf(acpSessionConfigOption))

		acpPermissionOption = jObj("PermissionOption",
			must("kind", jEnum("allow_once", "allow_always", "reject_once", "reject_always")),
			must("name", jString), must("optionId", jString))
		acpPermissionOutcome = jTagged("RequestPermissionOutcome", "outcome", map[string]shape{
			"cancelled": jPlain(""),
			"selected":  jObj("SelectedPermissionOutcome", must("optionId", jString)),
		})

		acpUsage = jPlain("Usage",
			may("cachedReadTokens", jNullable(jUint(maxU64))), may("cachedWriteTokens", jNullable(jUint(maxU64))),
			must("inputTokens", jUint(maxU64)), must("outputTokens", jUint(maxU64)),
			may("thoughtTokens", jNullable(jUint(maxU64))), must("totalTokens", jUint(maxU64)))

		acpPosition = jPlain("Position", must("character", jUint(maxU32)), must("line", jUint(maxU32)))
		acpRange    = jPlain("Range", must("end", acpPosition), must("start", acpPosition))

		acpElicitationScope = []shape{
			jPlain("ElicitationSessionScope", must("sessionId", jString), may("toolCallId", acpStrOrNull)),
			jPlain("ElicitationRequestScope", must("requestId", acpRequestID)),
		}
	)
	return map[string]acpMethod{
		// Client -> agent (stable).
		"initialize": acpReq(acpAgentSide,
			jObj("InitializeRequest", may("clientCapabilities", acpClientCapabilities), may("clientInfo", jNullable(acpImplementation)), must("protocolVersion", acpProtocolVer)),
			jObj("InitializeResponse", may("agentCapabilities", acpAgentCapabilities), may("agentInfo", jNullable(acpImplementation)),
				may("authMethods", jArrayOf(acpAuthMethod)), must("protocolVersion", acpProtocolVer))),
		"authenticate": acpReq(acpAgentSide, jObj("AuthenticateRequest", must("methodId", jString)), jObj("AuthenticateResponse")),
		"session/new": acpReq(acpAgentSide,
			jObj("NewSessionRequest", may("additionalDirectories", acpStrings), must("cwd", jString), must("mcpServers", jArrayOf(acpMcpServer))),
			jObj("NewSessionResponse", may("configOptions", acpConfigOptions), may("models", acpSessionModelState), may("modes", acpSessionModeState), must("sessionId", acpSessionID))),
		"session/load": acpReq(acpAgentSide,
			jObj("LoadSessionRequest", may("additionalDirectories", acpStrings), must("cwd", jString), must("mcpServers", jArrayOf(acpMcpServer)), must("sessionId", acpSessionID)),
			jObj("LoadSessionResponse", may("configOptions", acpConfigOptions), may("models", acpSessionModelState), may("modes", acpSessionModeState))),
		"session/set_mode": acpReq(acpAgentSide,
			jObj("SetSessionModeRequest", must("modeId", jString), must("sessionId", acpSessionID)), jObj("SetSessionModeResponse")),
		"session/prompt": acpReq(acpAgentSide,
			jObj("PromptRequest", may("messageId", acpStrOrNull), must("prompt", jArrayOf(acpContentBlock)), must("sessionId", acpSessionID)),
			jObj("PromptResponse", must("stopReason", acpStopReason), may("usage", jNullable(acpUsage)), may("userMessageId", acpStrOrNull))),
		"session/cancel": acpNotif(acpAgentSide, jObj("CancelNotification", must("sessionId", acpSessionID))),
		"session/list": acpReq(acpAgentSide,
			jObj("ListSessionsRequest", may("additionalDirectories", acpStrings), may("cursor", acpStrOrNull), may("cwd", acpStrOrNull)),
			jObj("ListSessionsResponse", may("nextCursor", acpStrOrNull), must("sessions", jArrayOf(jObj("SessionInfo",
				may("additionalDirectories", acpStrings), must("cwd", jString), must("sessionId", acpSessionID),
				may("title", acpStrOrNull), may("updatedAt", acpStrOrNull)))))),
		"session/resume": acpReq(acpAgentSide,
			jObj("ResumeSessionRequest", may("additionalDirectories", acpStrings), must("cwd", jString), may("mcpServers", jArrayOf(acpMcpServer)), must("sessionId", acpSessionID)),
			jObj("ResumeSessionResponse", may("configOptions", acpConfigOptions), may("models", acpSessionModelState), may("modes", acpSessionModeState))),
		"session/close": acpReq(acpAgentSide, jObj("CloseSessionRequest", must("sessionId", acpSessionID)), jObj("CloseSessionResponse")),
		"session/set_config_option": acpReq(acpAgentSide,
			jObj("SetSessionConfigOptionRequest", must("configId", jString), must("sessionId", acpSessionID)).with(jAnyOf("SetSessionConfigOptionRequest",
				jPlain("boolean value", must("type", constShape("boolean")), must("value", jBoolean)),
				jPlain("value id", must("value", jString)))),
			jObj("SetSessionConfigOptionResponse", must("configOptions", jArrayOf(acpSessionConfigOption)))),

		// Client -> agent (unstable).
		"session/fork": acpReq(acpAgentSide,
			jObj("ForkSessionRequest", may("additionalDirectories", acpStrings), must("cwd", jString), may("mcpServers", jArrayOf(acpMcpServer)), must("sessionId", acpSessionID)),
			jObj("ForkSessionResponse", may("configOptions", acpConfigOptions), may("models", acpSessionModelState), may("modes", acpSessionModeState), must("sessionId", acpSessionID))),
		"session/set_model": acpReq(acpAgentSide,
			jObj("SetSessionModelRequest", must("modelId", jString), must("sessionId", acpSessionID)), jObj("SetSessionModelResponse")),
		"logout": acpReq(acpAgentSide, jObj("LogoutRequest"), jObj("LogoutResponse")),
		"providers/list": acpReq(acpAgentSide, jObj("ListProvidersRequest"), jObj("ListProvidersResponse", must("providers", jArrayOf(jObj("ProviderInfo",
			may("current", jNullable(jPlain("ProviderCurrentConfig", must("apiType", jString), must("baseUrl", jString)))),
			must("id", jString), must("required", jBoolean), must("supported", acpStrings)))))),
		"providers/set": acpReq(acpAgentSide,
			jObj("SetProvidersRequest", must("apiType", jString), must("baseUrl", jString), may("headers", jAnyObject), must("id", jString)), jObj("SetProvidersResponse")),
		"providers/disable": acpReq(acpAgentSide, jObj("DisableProvidersRequest", must("id", jString)), jObj("DisableProvidersResponse")),
		"nes/start": acpReq(acpAgentSide,
			jObj("StartNesRequest", may("repository", jNullable(jPlain("NesRepository", must("name", jString), must("owner", jString), must("remoteUrl", jString)))),
				may("workspaceFolders", jNullable(jArrayOf(jPlain("WorkspaceFolder", must("name", jString), must("uri", jString))))),
				may("workspaceUri", acpStrOrNull)),
			jObj("StartNesResponse", must("sessionId", acpSessionID))),
		"nes/suggest": acpReq(acpAgentSide,
			jObj("SuggestNesRequest", may("context", jNullable(jAnyObject)), must("position", acpPosition), may("selection", jNullable(acpRange)),
				must("sessionId", acpSessionID), must("triggerKind", jEnum("automatic", "diagnostic", "manual")), must("uri", jString), must("version", jInteger)),
			jObj("SuggestNesResponse", must("suggestions", jArrayOf(jTagged("NesSuggestion", "kind", map[string]shape{
				"edit": jPlain("NesEditSuggestion", may("cursorPosition", jNullable(acpPosition)),
					must("edits", jArrayOf(jPlain("NesTextEdit", must("newText", jString), must("range", acpRange)))), must("id", jString), must("uri", jString)),
				"jump":   jPlain("NesJumpSuggestion", must("id", jString), must("position", acpPosition), must("uri", jString)),
				"rename": jPlain("NesRenameSuggestion", must("id", jString), must("newName", jString), must("position", acpPosition), must("uri", jString)),
				"searchAndReplace": jPlain("NesSearchAndReplaceSuggestion", must("id", jString), may("isRegex", jNullable(jBoolean)),
					must("replace", jString), must("search", jString), must("uri", jString)),
			}))))),
		"nes/close":  acpReq(acpAgentSide, jObj("CloseNesRequest", must("sessionId", acpSessionID)), jObj("CloseNesResponse")),
		"nes/accept": acpNotif(acpAgentSide, jObj("AcceptNesNotification", must("id", jString), must("sessionId", acpSessionID))),
		"nes/reject": acpNotif(acpAgentSide, jObj("RejectNesNotification", must("id", jString),
			may("reason", jNullable(jEnum("rejected", "ignored", "replaced", "cancelled"))), must("sessionId", acpSessionID))),
		"document/didOpen": acpNotif(acpAgentSide, jObj("DidOpenDocumentNotification", must("languageId", jString), must("sessionId", acpSessionID),
			must("text", jString), must("uri", jString), must("version", jInteger))),
		"document/didChange": acpNotif(acpAgentSide, jObj("DidChangeDocumentNotification",
			must("contentChanges", jArrayOf(jPlain("TextDocumentContentChangeEvent", may("range", jNullable(acpRange)), must("text", jString)))),
			must("sessionId", acpSessionID), must("uri", jString), must("version", jInteger))),
		"document/didClose": acpNotif(acpAgentSide, jObj("DidCloseDocumentNotification", must("sessionId", acpSessionID), must("uri", jString))),
		"document/didSave":  acpNotif(acpAgentSide, jObj("DidSaveDocumentNotification", must("sessionId", acpSessionID), must("uri", jString))),
		"document/didFocus": acpNotif(acpAgentSide, jObj("DidFocusDocumentNotification", must("position", acpPosition), must("sessionId", acpSessionID),
			must("uri", jString), must("version", jInteger), must("visibleRange", acpRange))),

		// Agent -> client (stable).
		"session/update": acpNotif(acpClientSide, jObj("SessionNotification", must("sessionId", acpSessionID), must("update", acpSessionUpdate))),
		"session/request_permission": acpReq(acpClientSide,
			jObj("RequestPermissionRequest", must("options", jArrayOf(acpPermissionOption)), must("sessionId", acpSessionID), must("toolCall", acpToolCallUpdate)),
			jObj("RequestPermissionResponse", must("outcome", acpPermissionOutcome))),
		"fs/read_text_file": acpReq(acpClientSide,
			jObj("ReadTextFileRequest", may("limit", jNullable(jUint(maxU32))), may("line", jNullable(jUint(maxU32))), must("path", jString), must("sessionId", acpSessionID)),
			jObj("ReadTextFileResponse", must("content", jString))),
		"fs/write_text_file": acpReq(acpClientSide,
			jObj("WriteTextFileRequest", must("content", jString), must("path", jString), must("sessionId", acpSessionID)), jObj("WriteTextFileResponse")),
		"terminal/create": acpReq(acpClientSide,
			jObj("CreateTerminalRequest", may("args", acpStrings), must("command", jString), may("cwd", acpStrOrNull), may("env", jArrayOf(acpEnvVariable)),
				may("outputByteLimit", jNullable(jUint(maxU64))), must("sessionId", acpSessionID)),
			jObj("CreateTerminalResponse", must("terminalId", jString))),
		"terminal/output": acpReq(acpClientSide,
			jObj("TerminalOutputRequest", must("sessionId", acpSessionID), must("terminalId", jString)),
			jObj("TerminalOutputResponse", may("exitStatus", jNullable(jObj("TerminalExitStatus", may("exitCode", jNullable(jUint(maxU32))), may("signal", acpStrOrNull)))),
				must("output", jString), must("truncated", jBoolean))),
		"terminal/release": acpReq(acpClientSide,
			jObj("ReleaseTerminalRequest", must("sessionId", acpSessionID), must("terminalId", jString)), jObj("ReleaseTerminalResponse")),
		"terminal/wait_for_exit": acpReq(acpClientSide,
			jObj("WaitForTerminalExitRequest", must("sessionId", acpSessionID), must("terminalId", jString)),
			jObj("WaitForTerminalExitResponse", may("exitCode", jNullable(jUint(maxU32))), may("signal", acpStrOrNull))),
		"terminal/kill": acpReq(acpClientSide,
			jObj("KillTerminalRequest", must("sessionId", acpSessionID), must("terminalId", jString)), jObj("KillTerminalResponse")),

		// Agent -> client (unstable).
		"elicitation/create": acpReq(acpClientSide,
			jObj("CreateElicitationRequest", must("message", jString)).with(jTagged("CreateElicitationRequest", "mode", map[string]shape{
				"form": jPlain("ElicitationFormMode", must("requestedSchema", jPlain("ElicitationSchema",
					may("description", acpStrOrNull), may("properties", jAnyObject), may("required", jNullable(acpStrings)),
					may("title", acpStrOrNull), may("type", constShape("object"))))).with(jAnyOf("ElicitationScope", acpElicitationScope...)),
				"url": jPlain("ElicitationUrlMode", must("elicitationId", jString), must("url", jString)).with(jAnyOf("ElicitationScope", acpElicitationScope...)),
			})),
			jObj("CreateElicitationResponse").with(jTagged("CreateElicitationResponse", "action", map[string]shape{
				"accept":  jPlain("ElicitationAcceptAction", may("content", jNullable(jAnyObject))),
				"decline": jPlain(""),
				"cancel":  jPlain(""),
			}))),
		"elicitation/complete": acpNotif(acpClientSide, jObj("CompleteElicitationNotification", must("elicitationId", jString))),
		"mcp/connect":          acpReq(acpClientSide, jObj("ConnectMcpRequest", must("acpId", jString)), jObj("ConnectMcpResponse", must("connectionId", jString))),
		"mcp/disconnect":       acpReq(acpClientSide, jObj("DisconnectMcpRequest", must("connectionId", jString)), jObj("DisconnectMcpResponse")),
		"mcp/message": {side: acpBothSides,
			req:    jObj("MessageMcpRequest", must("connectionId", jString), must("method", jString), may("params", jNullable(jAnyObject))),
			result: jAnything, // the inner MCP result, any JSON value
			notif:  jObj("MessageMcpNotification", must("connectionId", jString), must("method", jString), may("params", jNullable(jAnyObject))),
		},

		// Either side.
		"$/cancel_request": acpNotif(acpBothSides, jObj("CancelRequestNotification", must("requestId", acpRequestID))),
	}
}
