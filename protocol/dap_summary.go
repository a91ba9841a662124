package protocol

// What rpctap says about DAP frames beyond their rules (dap.go): an event's
// reason or output, a response's outcome, failed responses.

// Catalogue: DAP's requests (reverse requests included) and events, as the
// specification's "Requests", "Reverse Requests" and "Events" sections name
// them.
func (dapProto) Catalogue() []string {
	return []string{"attach", "breakpointLocations", "cancel", "completions", "configurationDone", "continue", "dataBreakpointInfo",
		"disassemble", "disconnect", "evaluate", "exceptionInfo", "goto", "gotoTargets", "initialize", "launch",
		"loadedSources", "locations", "modules", "next", "pause", "readMemory", "restart", "restartFrame",
		"reverseContinue", "scopes", "setBreakpoints", "setDataBreakpoints", "setExceptionBreakpoints",
		"setExpression", "setFunctionBreakpoints", "setInstructionBreakpoints", "setVariable", "source",
		"stackTrace", "stepBack", "stepIn", "stepInTargets", "stepOut", "terminate", "terminateThreads", "threads",
		"variables", "writeMemory",
		"runInTerminal", "startDebugging",
		"breakpoint", "capabilities", "continued", "exited", "initialized", "invalidated", "loadedSource", "memory",
		"module", "output", "process", "progressEnd", "progressStart", "progressUpdate", "stopped", "terminated", "thread"}
}

func (dapProto) Summarize(_ Dir, _ Info, frame []byte) string {
	switch str(memberOf(frame, "type")) {
	case "event":
		body := memberOf(frame, "body")
		if r := str(memberOf(body, "reason")); r != "" {
			return r
		}
		return quoteWords(str(memberOf(body, "output")))
	case "response":
		// Response: "success: Outcome of the request"; "message: Contains
		// the raw error in short form if success is false".
		if string(memberOf(frame, "success")) == "false" {
			return "failed " + quoteWords(str(memberOf(frame, "message")))
		}
		return "ok"
	}
	return ""
}

// Failed: a response with "success": false.
func (dapProto) Failed(_ Dir, _ Info, frame []byte) bool {
	return string(memberOf(frame, "success")) == "false"
}
