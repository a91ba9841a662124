package protocol

import "sync"

// MCP message shapes, written from the Model Context Protocol specification
// (revisions 2025-06-18 and 2025-11-25) with tolerance for the newer draft
// seen in ../shared/traffic/mcp-go-everything.* (server/discover, result
// fields resultType/ttlMs/cacheScope, "io.modelcontextprotocol/*" keys in
// _meta): unknown fields are allowed everywhere, so those pass.

// mcpMethod is one MCP method. side: who sends the request/notification.
type mcpMethod struct {
	from   mcpFrom
	req    shape
	result shape
	notif  shape
}

type mcpFrom uint8

const (
	mcpFromClient mcpFrom = iota // client (the parent) -> server (the child)
	mcpFromServer                // server (the child) -> client (the parent)
	mcpFromEither
)

func (f mcpFrom) allows(d Dir) bool {
	switch f {
	case mcpFromClient:
		return d == FromParent
	case mcpFromServer:
		return d == FromChild
	}
	return true
}

func (f mcpFrom) String() string {
	switch f {
	case mcpFromClient:
		return "the client (parent) sends it to the server"
	case mcpFromServer:
		return "the server (child) sends it to the client"
	}
	return "either side sends it"
}

// Catalogue constructors, run at init: //go:noinline for the binary's
// size (see jUint in jsonrpc_shape.go).
//
//go:noinline
func mcpReq(from mcpFrom, params, result shape) mcpMethod {
	return mcpMethod{from: from, req: params, result: result}
}

//go:noinline
func mcpNotif(from mcpFrom, params shape) mcpMethod { return mcpMethod{from: from, notif: params} }

// mcpMethods is the catalogue, built on first use: built at init, it ran
// in every rpctap process (the tap and sink of every recording, --version),
// most of which never judge a frame of this protocol.
var mcpMethods = sync.OnceValue(buildMcpMethods)

func buildMcpMethods() map[string]mcpMethod {
	var (
		mcpStrings       = jArrayOf(jString)
		mcpCursor        = may("nextCursor", jString)
		mcpParamsCursor  = may("cursor", jString)
		mcpProgressToken = jAnyOf("ProgressToken", jString, jInteger)
		mcpRequestID     = jAnyOf("RequestId", jString, jInteger)
		mcpRole          = jEnum("user", "assistant")
		mcpLogLevel      = jEnum("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
		mcpIcons         = may("icons", jArrayOf(jPlain("Icon", must("src", jString), may("mimeType", jString), may("sizes", mcpStrings))))

		mcpImplementation = jPlain("Implementation", must("name", jString), must("version", jString), may("title", jString),
			may("websiteUrl", jString), mcpIcons)

		mcpAnnotations = may("annotations", jPlain("Annotations", may("audience", jArrayOf(mcpRole)),
			may("priority", jNumber), may("lastModified", jString)))

		mcpTextResource = jObj("TextResourceContents", must("uri", jString), may("mimeType", jString), must("text", jString))
		mcpBlobResource = jObj("BlobResourceContents", must("uri", jString), may("mimeType", jString), must("blob", jString))
		mcpResourceBody = jAnyOf("ResourceContents", mcpTextResource, mcpBlobResource)

		mcpResourceFields = []field{metaField, must("uri", jString), must("name", jString), may("title", jString),
			may("description", jString), may("mimeType", jString), may("size", jInteger), mcpAnnotations, mcpIcons}

		mcpContentBlock = jTagged("ContentBlock", "type", map[string]shape{
			"text":          jObj("TextContent", must("text", jString), mcpAnnotations),
			"image":         jObj("ImageContent", must("data", jString), must("mimeType", jString), mcpAnnotations),
			"audio":         jObj("AudioContent", must("data", jString), must("mimeType", jString), mcpAnnotations),
			"resource_link": &objShape{name: "ResourceLink", fields: mcpResourceFields},
			"resource":      jObj("EmbeddedResource", must("resource", mcpResourceBody), mcpAnnotations),
		})

		// Sampling messages may also carry tool_use / tool_result blocks
		// (2025-11-25), singly or as an array.
		mcpSamplingContent = jAnyOf("SamplingContent",
			jPlain("SamplingContentBlock", must("type", jString)),
			jArrayOf(jPlain("SamplingContentBlock", must("type", jString))))

		mcpTool = jObj("Tool", must("name", jString), may("title", jString), may("description", jString),
			must("inputSchema", jAnyObject), may("outputSchema", jAnyObject), may("annotations", jAnyObject), mcpIcons)

		mcpCallToolResult = jObj("CallToolResult", must("content", jArrayOf(mcpContentBlock)),
			may("structuredContent", jAnyObject), may("isError", jBoolean))
		mcpCreateTaskResult = jObj("CreateTaskResult", must("task", jAnyObject))

		mcpEmpty = jObj("EmptyResult")

		mcpTaskParams = jObj("TaskRequest", must("taskId", jString))
	)
	return map[string]mcpMethod{
		// Lifecycle.
		"initialize": mcpReq(mcpFromClient,
			jObj("InitializeRequest", must("protocolVersion", jString), must("capabilities", jAnyObject), must("clientInfo", mcpImplementation)),
			jObj("InitializeResult", must("protocolVersion", jString), must("capabilities", jAnyObject), must("serverInfo", mcpImplementation),
				may("instructions", jString))),
		"notifications/initialized": mcpNotif(mcpFromClient, jObj("InitializedNotification")),
		"ping":                      mcpReq(mcpFromEither, jObj("PingRequest"), mcpEmpty),
		// Draft (2026): a stateless client asks the server what it supports.
		"server/discover": mcpReq(mcpFromClient, jObj("DiscoverRequest"),
			jObj("DiscoverResult", may("supportedVersions", mcpStrings), may("capabilities", jAnyObject), may("instructions", jString))),

		// Tools.
		"tools/list": mcpReq(mcpFromClient, jObj("ListToolsRequest", mcpParamsCursor),
			jObj("ListToolsResult", must("tools", jArrayOf(mcpTool)), mcpCursor)),
		"tools/call": mcpReq(mcpFromClient, jObj("CallToolRequest", must("name", jString), may("arguments", jAnyObject), may("task", jAnyObject)),
			jAnyOf("CallToolResult", mcpCallToolResult, mcpCreateTaskResult)),

		// Resources.
		"resources/list": mcpReq(mcpFromClient, jObj("ListResourcesRequest", mcpParamsCursor),
			jObj("ListResourcesResult", must("resources", jArrayOf(&objShape{name: "Resource", fields: mcpResourceFields})), mcpCursor)),
		"resources/templates/list": mcpReq(mcpFromClient, jObj("ListResourceTemplatesRequest", mcpParamsCursor),
			jObj("ListResourceTemplatesResult", must("resourceTemplates", jArrayOf(jObj("ResourceTemplate",
				must("uriTemplate", jString), must("name", jString), may("title", jString), may("description", jString),
				may("mimeType", jString), mcpAnnotations, mcpIcons))), mcpCursor)),
		"resources/read": mcpReq(mcpFromClient, jObj("ReadResourceRequest", must("uri", jString)),
			jObj("ReadResourceResult", must("contents", jArrayOf(mcpResourceBody)))),
		"resources/subscribe":   mcpReq(mcpFromClient, jObj("SubscribeRequest", must("uri", jString)), mcpEmpty),
		"resources/unsubscribe": mcpReq(mcpFromClient, jObj("UnsubscribeRequest", must("uri", jString)), mcpEmpty),

		// Prompts.
		"prompts/list": mcpReq(mcpFromClient, jObj("ListPromptsRequest", mcpParamsCursor),
			jObj("ListPromptsResult", must("prompts", jArrayOf(jObj("Prompt", must("name", jString), may("title", jString),
				may("description", jString), may("arguments", jArrayOf(jPlain("PromptArgument", must("name", jString),
					may("title", jString), may("description", jString), may("required", jBoolean)))), mcpIcons))), mcpCursor)),
		"prompts/get": mcpReq(mcpFromClient, jObj("GetPromptRequest", must("name", jString), may("arguments", jAnyObject)),
			jObj("GetPromptResult", may("description", jString), must("messages", jArrayOf(jPlain("PromptMessage",
				must("role", mcpRole), must("content", mcpContentBlock)))))),

		// Completion and logging.
		"completion/complete": mcpReq(mcpFromClient,
			jObj("CompleteRequest",
				must("ref", jTagged("Reference", "type", map[string]shape{
					"ref/prompt":   jPlain("PromptReference", must("name", jString)),
					"ref/resource": jPlain("ResourceTemplateReference", must("uri", jString)),
				})),
				must("argument", jPlain("CompleteArgument", must("name", jString), must("value", jString))),
				may("context", jPlain("CompleteContext", may("arguments", jAnyObject)))),
			jObj("CompleteResult", must("completion", jPlain("Completion", must("values", mcpStrings), may("total", jInteger), may("hasMore", jBoolean))))),
		"logging/setLevel": mcpReq(mcpFromClient, jObj("SetLevelRequest", must("level", mcpLogLevel)), mcpEmpty),

		// Server -> client requests.
		"sampling/createMessage": mcpReq(mcpFromServer,
			jObj("CreateMessageRequest",
				must("messages", jArrayOf(jPlain("SamplingMessage", must("role", mcpRole), must("content", mcpSamplingContent)))),
				must("maxTokens", jInteger), may("systemPrompt", jString), may("temperature", jNumber),
				may("stopSequences", mcpStrings), may("includeContext", jEnum("none", "thisServer", "allServers")),
				may("modelPreferences", jAnyObject), may("metadata", jAnyObject), may("tools", jArrayOf(mcpTool)), may("toolChoice", jAnyObject)),
			jObj("CreateMessageResult", must("role", mcpRole), must("content", mcpSamplingContent), must("model", jString), may("stopReason", jString))),
		"roots/list": mcpReq(mcpFromServer, jObj("ListRootsRequest"),
			jObj("ListRootsResult", must("roots", jArrayOf(jObj("Root", must("uri", jString), may("name", jString)))))),
		"elicitation/create": mcpReq(mcpFromServer,
			jObj("ElicitRequest", must("message", jString), may("mode", jEnum("form", "url")), may("requestedSchema", jAnyObject),
				may("url", jString), may("elicitationId", jString)),
			jObj("ElicitResult", must("action", jEnum("accept", "decline", "cancel")), may("content", jAnyObject))),

		// Tasks (2025-11-25), either side may be the receiver.
		"tasks/get":    mcpReq(mcpFromEither, mcpTaskParams, jObj("Task", must("taskId", jString), must("status", jString))),
		"tasks/result": mcpReq(mcpFromEither, mcpTaskParams, jAnyObject),
		"tasks/cancel": mcpReq(mcpFromEither, mcpTaskParams, jObj("Task", must("taskId", jString), must("status", jString))),
		"tasks/list":   mcpReq(mcpFromEither, jObj("ListTasksRequest", mcpParamsCursor), jObj("ListTasksResult", must("tasks", jArrayOf(jAnyObject)), mcpCursor)),

		// Notifications.
		"notifications/cancelled": mcpNotif(mcpFromEither, jObj("CancelledNotification", may("requestId", mcpRequestID), may("reason", jString))),
		"notifications/progress": mcpNotif(mcpFromEither, jObj("ProgressNotification", must("progressToken", mcpProgressToken),
			must("progress", jNumber), may("total", jNumber), may("message", jString))),
		"notifications/message": mcpNotif(mcpFromServer, jObj("LoggingMessageNotification", must("level", mcpLogLevel),
			may("logger", jString), must("data", jAnything))),
		"notifications/resources/updated":      mcpNotif(mcpFromServer, jObj("ResourceUpdatedNotification", must("uri", jString))),
		"notifications/resources/list_changed": mcpNotif(mcpFromServer, jObj("ResourceListChangedNotification")),
		"notifications/tools/list_changed":     mcpNotif(mcpFromServer, jObj("ToolListChangedNotification")),
		"notifications/prompts/list_changed":   mcpNotif(mcpFromServer, jObj("PromptListChangedNotification")),
		"notifications/roots/list_changed":     mcpNotif(mcpFromClient, jObj("RootsListChangedNotification")),
		"notifications/elicitation/complete":   mcpNotif(mcpFromServer, jObj("ElicitationCompleteNotification", must("elicitationId", jString))),
		"notifications/tasks/status":           mcpNotif(mcpFromEither, jObj("TaskStatusNotification", must("taskId", jString), must("status", jString))),
	}
}

// hasRequired reports whether an object shape has a required field, i.e.
// whether its params may not be omitted.
func hasRequired(s shape) bool {
	o, ok := s.(*objShape)
	if !ok {
		return true
	}
	for _, f := range o.fields {
		if f.required {
			return true
		}
	}
	return len(o.extra) > 0
}
