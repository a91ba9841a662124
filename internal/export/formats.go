package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// jsonStream writes a JSON document whose one array grows entry by entry:
// head, then entries separated by commas, then tail.
type jsonStream struct {
	w    *bufio.Writer
	n    int
	tail string
}

func newJSONStream(w io.Writer) *jsonStream { return &jsonStream{w: bufio.NewWriterSize(w, 64<<10)} }

func (j *jsonStream) entry(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if j.n > 0 {
		j.w.WriteString(",\n")
	}
	j.n++
	_, err = j.w.Write(b)
	return err
}

func (j *jsonStream) end() error {
	j.w.WriteString(j.tail)
	return j.w.Flush()
}

// ---- HAR 1.2

// HAR writes an HTTP Archive 1.2 (docs/export.md "HAR"): one entry per
// exchange. A request is a POST to rpctap://PROTOCOL/METHOD with the frame
// as its JSON body; its answer is the response body, status 200, or 500 for
// an error answer; a request never answered has status 0; a notification
// or event is an entry with status 204 and no response body. time and
// timings.wait are the answer's latency in ms.
type HAR struct {
	s  Session
	js *jsonStream
}

// NewHAR writes to w.
func NewHAR(w io.Writer) *HAR { return &HAR{js: newJSONStream(w)} }

func (h *HAR) Begin(s Session) error {
	h.s = s
	h.js.tail = "\n]}}\n"
	_, err := fmt.Fprintf(h.js.w, `{"log":{"version":"1.2","creator":{"name":"rpctap","version":"1"},"comment":%s,"entries":[`+"\n", mustJSON("rpctap export of "+s.File+" ("+orRaw(s.Protocol)+")"))
	return err
}

func (h *HAR) Exchange(x *Exchange) error {
	req := x.Request
	type nv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	status, statusText, latency := 0, "no answer", -1.0
	content := map[string]any{"size": 0, "mimeType": "application/json"}
	if x.Notification {
		status, statusText, latency = 204, req.Kind, 0
	}
	if x.Response != nil {
		latency = float64(x.Response.T-req.T) / 1e6
		status, statusText = 200, "OK"
		if code, msg, ok := errorOf(x.Response.Payload); ok {
			status, statusText = 500, fmt.Sprintf("%d %s", code, msg)
		}
		content = map[string]any{"size": len(x.Response.Payload), "mimeType": "application/json", "text": string(x.Response.Payload)}
	}
	wait := latency
	if wait < 0 {
		wait = -1
	}
	entry := map[string]any{
		"startedDateTime": at(h.s, req.T).UTC().Format(time.RFC3339Nano),
		"time":            max(latency, 0),
		"request": map[string]any{
			"method": "POST", "url": "rpctap://" + orRaw(h.s.Protocol) + "/" + req.Method, "httpVersion": "JSON-RPC",
			"headers": []nv{{"X-Rpctap-Direction", req.Dir}, {"X-Rpctap-Kind", req.Kind}, {"X-Rpctap-Id", req.ID}, {"X-Rpctap-Record", strconv.FormatUint(req.Record, 10)}},
			"cookies": []nv{}, "queryString": []nv{}, "headersSize": -1, "bodySize": len(req.Payload),
			"postData": map[string]any{"mimeType": "application/json", "text": string(req.Payload)},
		},
		"response": map[string]any{
			"status": status, "statusText": statusText, "httpVersion": "JSON-RPC",
			"headers": []nv{}, "cookies": []nv{}, "content": content, "redirectURL": "", "headersSize": -1, "bodySize": content["size"],
		},
		"cache":   map[string]any{},
		"timings": map[string]any{"send": 0, "wait": wait, "receive": 0},
	}
	return h.js.entry(entry)
}

func (h *HAR) End() error { return h.js.end() }

// ---- Chrome / Perfetto trace

// Trace writes Chrome trace event JSON, which Perfetto and chrome://tracing
// open: one process for the session, one track (thread) per direction and
// method, a complete event ("X") per request with its answer, an instant
// ("i") per notification or event or unanswered request. Times in µs.
type Trace struct {
	js     *jsonStream
	tracks map[string]int
}

// NewTrace writes to w.
func NewTrace(w io.Writer) *Trace { return &Trace{js: newJSONStream(w), tracks: map[string]int{}} }

func (t *Trace) Begin(s Session) error {
	t.js.tail = "\n]}\n"
	if _, err := io.WriteString(t.js.w, `{"displayTimeUnit":"ms","traceEvents":[`+"\n"); err != nil {
		return err
	}
	return t.js.entry(map[string]any{"ph": "M", "pid": 1, "name": "process_name", "args": map[string]any{"name": "rpctap " + s.File + " (" + orRaw(s.Protocol) + ")"}})
}

func (t *Trace) track(dir, method string) (int, error) {
	name := dir + " " + method
	if id, ok := t.tracks[name]; ok {
		return id, nil
	}
	id := len(t.tracks) + 1
	t.tracks[name] = id
	return id, t.js.entry(map[string]any{"ph": "M", "pid": 1, "tid": id, "name": "thread_name", "args": map[string]any{"name": name}})
}

func (t *Trace) Exchange(x *Exchange) error {
	req := x.Request
	tid, err := t.track(req.Dir, req.Method)
	if err != nil {
		return err
	}
	args := map[string]any{"record": req.Record, "kind": req.Kind}
	if req.ID != "" {
		args["id"] = req.ID
	}
	ev := map[string]any{"pid": 1, "tid": tid, "name": orRaw(req.Method), "cat": req.Kind, "ts": float64(req.T) / 1e3, "args": args}
	switch {
	case x.Response != nil:
		ev["ph"], ev["dur"] = "X", float64(x.Response.T-req.T)/1e3
		if code, msg, ok := errorOf(x.Response.Payload); ok {
			args["error"] = fmt.Sprintf("%d %s", code, msg)
		}
	default:
		ev["ph"], ev["s"] = "i", "t"
		if !x.Notification {
			args["answered"] = false
		}
	}
	return t.js.entry(ev)
}

func (t *Trace) End() error { return t.js.end() }

func orRaw(p string) string {
	if p == "" {
		return "raw"
	}
	return p
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
