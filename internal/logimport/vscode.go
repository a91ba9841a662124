package logimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// readVSCode reads a VS Code language client's trace ("trace.server":
// "verbose"), as vscode-languageclient writes it. Read from
// microsoft/vscode-languageserver-node: jsonrpc/src/common/connection.ts
// (traceSending*/traceReceived*, logLSPMessage; jsonrpc 9.0.1, commit
// 0da5527) and client/src/common/client.ts.
//
// Each entry starts with a header line; its data follows on the next lines:
//
//	[Trace - 10:15:02 AM] Sending request 'initialize - (0)'.     client 9.x and older: toLocaleTimeString, no date
//	2025-05-12 12:29:29.123 [trace] Sending request 'initialize - (0)'.   client 10 (a LogOutputChannel)
//	Params: {                                                       JSON.stringify(params, null, 4)
//	    "processId": 4242, ...
//	}
//
// The header texts are "Sending request 'M - (ID)'.", "Received request
// 'M - (ID)'.", "Sending notification 'M'.", "Received notification 'M'.",
// "Sending response 'M - (ID)'. Processing request took Nms", "Received
// response 'M - (ID)' in Nms." (with " Request failed: MESSAGE (CODE)." on
// an error) and "Received response ID without active response promise.";
// the data is "Params: ", "Result: ", "Error data: ", "No result returned."
// (a result that is null, false, 0 or "") or "No parameters provided.".
//
// The JSON form ("traceFormat": "json") logs each message whole:
//
//	[LSP   - 10:15:02 AM] {"isLSPMessage":true,"type":"send-request","message":{...},"timestamp":1732616102000}
//
// VS Code is the parent: "Sending" is In, "Received" is Out. Lines of other
// levels ([Info  - ...], [error]) are not messages and are skipped.
func readVSCode(data []byte, modTime time.Time) *Log {
	l := &Log{Protocol: "lsp", Framing: "content-length", Clock: "none"}
	ls := lines(data)
	var clock dayClock
	clock.mod = modTime
	for i := 0; i < len(ls); {
		h, ok := parseVSHeader(ls[i])
		if !ok {
			if strings.TrimSpace(ls[i]) != "" {
				l.Problems = append(l.Problems, Problem{i + 1, "not a trace entry: " + clip(ls[i])})
			}
			i++
			continue
		}
		start := i
		i++
		var block []string
		for i < len(ls) {
			if _, ok := parseVSHeader(ls[i]); ok {
				break
			}
			block = append(block, ls[i])
			i++
		}
		if !h.message {
			continue
		}
		when := h.wall
		if when.IsZero() && h.tod >= 0 {
			when = clock.at(h.tod)
		}
		m, err := vsMessage(h.text, strings.TrimSpace(strings.Join(block, "\n")))
		if err != nil {
			l.Problems = append(l.Problems, Problem{start + 1, err.Error()})
			continue
		}
		exact := !m.Time.IsZero() || !h.wall.IsZero()
		if m.Time.IsZero() {
			m.Time = when
		}
		m.Line = start + 1
		switch {
		case m.Time.IsZero():
		case !exact:
			l.Clock = "time-of-day"
		case l.Clock == "none":
			l.Clock = "wall"
		}
		l.Messages = append(l.Messages, m)
	}
	return l
}

type vsHeader struct {
	text    string
	message bool          // a trace entry (not [Info ...] or [error])
	wall    time.Time     // LogOutputChannel form: a full local time
	tod     time.Duration // old form: the time of day, -1 when unknown
}

var (
	vsOld = lazyRegexp(`^\[(Trace|LSP|Info|Warn|Error|Debug)\s*- ([^\]]*)\] ?(.*)$`)
	vsNew = lazyRegexp(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \[(\w+)\] ?(.*)$`)
)

func parseVSHeader(s string) (vsHeader, bool) {
	if m := vsOld().FindStringSubmatch(s); m != nil {
		h := vsHeader{text: m[3], message: m[1] == "Trace" || m[1] == "LSP", tod: -1}
		for _, layout := range []string{"3:04:05 PM", "15:04:05", "3:04:05 pm", "3:04:05PM"} {
			if t, err := time.Parse(layout, strings.TrimSpace(m[2])); err == nil {
				h.tod = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second
				break
			}
		}
		return h, true
	}
	if m := vsNew().FindStringSubmatch(s); m != nil {
		h := vsHeader{text: m[3], message: m[2] == "trace", tod: -1}
		if t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", m[1], time.Local); err == nil {
			h.wall = t
		}
		return h, true
	}
	return vsHeader{}, false
}

// dayClock dates times of day: the log ends on the day the file was last
// written, and a time of day more than an hour earlier than the one before
// it is on the next day.
type dayClock struct {
	mod  time.Time
	day  time.Time
	last time.Duration
	set  bool
}

func (c *dayClock) at(tod time.Duration) time.Time {
	if !c.set {
		ref := c.mod
		if ref.IsZero() {
			ref = time.Now()
		}
		y, mo, d := ref.Date()
		c.day = time.Date(y, mo, d, 0, 0, 0, 0, ref.Location())
		if c.day.Add(tod).After(ref.Add(time.Minute)) {
			c.day = c.day.AddDate(0, 0, -1)
		}
		c.set = true
	} else if tod+time.Hour < c.last {
		c.day = c.day.AddDate(0, 0, 1)
	}
	c.last = tod
	return c.day.Add(tod)
}

var (
	vsReq      = lazyRegexp(`^(Sending|Received) request '(.*) - \((.*)\)'\.$`)
	vsNotif    = lazyRegexp(`^(Sending|Received) notification '(.*)'\.$`)
	vsSendResp = lazyRegexp(`^Sending response '(.*) - \((.*)\)'\. Processing request took -?\d+ms$`)
	vsRecvResp = lazyRegexp(`^Received response '(.*) - \((.*)\)' in -?\d+ms\.(?: Request failed: (.*) \((-?\d+)\)\.)?$`)
	vsOrphan   = lazyRegexp(`^Received response (.*) without active response promise\.$`)
)

func dirOf(verb string) Dir {
	if verb == "Sending" {
		return In
	}
	return Out
}

// vsID is an id as the trace prints it (`${message.id}`): digits are a
// number, anything else a string.
func vsID(s string) json.RawMessage {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.RawMessage(s)
	}
	return jsonString(s)
}

func vsMessage(text, block string) (Message, error) {
	if strings.HasPrefix(text, "{") {
		return vsJSONEntry(text + block)
	}
	data := func(prefix string) (json.RawMessage, bool, error) {
		if !strings.HasPrefix(block, prefix) {
			return nil, false, nil
		}
		v, err := compact([]byte(strings.TrimPrefix(block, prefix)))
		if err != nil {
			return nil, true, fmt.Errorf("%s is not JSON: %v", strings.TrimSuffix(prefix, ": "), err)
		}
		return v, true, nil
	}
	if m := vsReq().FindStringSubmatch(text); m != nil {
		params, _, err := data("Params: ")
		if err != nil {
			return Message{}, err
		}
		return Message{Dir: dirOf(m[1]), Body: rpc(vsID(m[3]), jsonString(m[2]), params, nil, nil)}, nil
	}
	if m := vsNotif().FindStringSubmatch(text); m != nil {
		params, _, err := data("Params: ")
		if err != nil {
			return Message{}, err
		}
		return Message{Dir: dirOf(m[1]), Body: rpc(nil, jsonString(m[2]), params, nil, nil)}, nil
	}
	var dir Dir
	var id json.RawMessage
	var failMsg, failCode string
	switch {
	case vsSendResp().MatchString(text):
		m := vsSendResp().FindStringSubmatch(text)
		dir, id = In, vsID(m[2])
	case vsRecvResp().MatchString(text):
		m := vsRecvResp().FindStringSubmatch(text)
		dir, id, failMsg, failCode = Out, vsID(m[2]), m[3], m[4]
	case vsOrphan().MatchString(text):
		dir, id = Out, vsID(vsOrphan().FindStringSubmatch(text)[1])
	default:
		return Message{}, fmt.Errorf("not a message the language client traces: %s", clip(text))
	}
	result, hasResult, err := data("Result: ")
	if err != nil {
		return Message{}, err
	}
	errData, hasData, err := data("Error data: ")
	if err != nil {
		return Message{}, err
	}
	if failCode != "" || hasData {
		// The text form prints an error's message and code only for a
		// response VS Code received; a response it sent shows the data.
		var e bytes.Buffer
		code, msg := failCode, failMsg
		if code == "" {
			code, msg = "-32603", "(the trace does not show this error's code and message)"
		}
		fmt.Fprintf(&e, `{"code":%s,"message":%s`, code, jsonString(msg))
		if hasData {
			fmt.Fprintf(&e, `,"data":%s`, errData)
		}
		e.WriteByte('}')
		return Message{Dir: dir, Body: rpc(id, nil, nil, nil, e.Bytes())}, nil
	}
	if !hasResult {
		result = json.RawMessage("null") // "No result returned."
	}
	return Message{Dir: dir, Body: rpc(id, nil, nil, result, nil)}, nil
}

// vsJSONEntry reads the JSON trace form's object.
func vsJSONEntry(s string) (Message, error) {
	var e struct {
		IsLSPMessage bool            `json:"isLSPMessage"`
		Type         string          `json:"type"`
		Message      json.RawMessage `json:"message"`
		Timestamp    *int64          `json:"timestamp"`
	}
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return Message{}, fmt.Errorf("not a JSON trace entry: %v", err)
	}
	if !e.IsLSPMessage || e.Message == nil {
		return Message{}, fmt.Errorf("a JSON trace entry without isLSPMessage and message")
	}
	var m Message
	switch {
	case strings.HasPrefix(e.Type, "send-"):
		m.Dir = In
	case strings.HasPrefix(e.Type, "receive-"):
		m.Dir = Out
	default:
		return Message{}, fmt.Errorf("JSON trace entry type %q is neither send-* nor receive-*", e.Type)
	}
	body, err := compact(e.Message)
	if err != nil {
		return Message{}, err
	}
	m.Body = body
	if e.Timestamp != nil {
		m.Time = time.UnixMilli(*e.Timestamp)
	}
	return m, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// lazyRegexp compiles a regular expression on first use: a package-level
// regexp.MustCompile runs in every rpctap process at start (the tap and
// the sink of every recording), though few commands use it.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
