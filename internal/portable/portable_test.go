package portable

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFrameReplacesRunValues(t *testing.T) {
	n := NewNormalizer(Context{Cwd: "/home/ann/proj", Home: "/home/ann", Tmp: "/tmp"})
	in := `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/home/ann/proj","mcpServers":[],"note":"see /home/ann/.config and /tmp/x.log, not /home/anna"}}`
	got, changed := n.Frame([]byte(in))
	want := `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"${RPCTAP_CWD}","mcpServers":[],"note":"see ${RPCTAP_HOME}/.config and ${RPCTAP_TMP}/x.log, not /home/anna"}}`
	if !changed || string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A session id: named once, the same name wherever it appears again.
	resp := `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess_0123456789abcdef"}}`
	got, _ = n.Frame([]byte(resp))
	if string(got) != `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"${RPCTAP_SESSION_1}"}}` {
		t.Fatalf("session: %s", got)
	}
	later := `{"method":"x","params":{"text":"file:///home/ann/proj/a.go in sess_0123456789abcdef","sessionId":"sess_0123456789abcdef","at":"2026-11-25T02:00:00.123Z","uuid":"8F14E45F-CEEA-467F-A0E6-123456789ABC","timestamp":1764000000123,"processId":4242,"count":7}}`
	got, _ = n.Frame([]byte(later))
	want = `{"method":"x","params":{"text":"file://${RPCTAP_CWD}/a.go in ${RPCTAP_SESSION_1}","sessionId":"${RPCTAP_SESSION_1}","at":"${RPCTAP_TIME_1}","uuid":"${RPCTAP_UUID_1}","timestamp":1764000000123,"processId":4242,"count":7}}`
	// Numbers stay numbers (NumberKeys): a placeholder string in place of
	// an integer would change the JSON type a peer checks.
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("not JSON")
	}
	if u := strings.Join(n.Used(), " "); u != "${RPCTAP_CWD} ${RPCTAP_HOME} ${RPCTAP_PID} ${RPCTAP_SESSION_1} ${RPCTAP_TIME_1} ${RPCTAP_TMP} ${RPCTAP_UUID_1}" {
		t.Errorf("used: %s", u)
	}
	// Nothing of the run: the very same bytes.
	plain := []byte(`{"jsonrpc":"2.0","id":9,"result":{"ok":true,"text":"a-b:c/d"}}`)
	if got, changed := n.Frame(plain); changed || string(got) != string(plain) {
		t.Errorf("changed a frame without run values: %s", got)
	}
}

func TestMatchAndFill(t *testing.T) {
	binds := map[string]string{}
	if !Match("${RPCTAP_CWD}/src/${RPCTAP_SESSION_1}.log", "/work/x/src/abc.log", binds) {
		t.Fatal("no match")
	}
	if binds["${RPCTAP_CWD}"] != "/work/x" || binds["${RPCTAP_SESSION_1}"] != "abc" {
		t.Fatalf("binds %v", binds)
	}
	if Match("${RPCTAP_UUID_1}-${RPCTAP_UUID_1}", "a-b", nil) {
		t.Error("one placeholder, two values")
	}
	if Match("${RPCTAP_CWD}/a", "/x/b", nil) || !Match("plain", "plain", nil) || Match("plain", "other", nil) {
		t.Error("literal parts must match")
	}
	binds["${RPCTAP_PID}"] = "4242"
	frame := []byte(`{"cwd":"${RPCTAP_CWD}","p":"${RPCTAP_PID}","s":"${RPCTAP_SESSION_1}","u":"${RPCTAP_UUID_9}","q":"say \"${RPCTAP_CWD}\""}`)
	got := Fill(FillNumbers(frame, binds), binds)
	want := `{"cwd":"/work/x","p":4242,"s":"abc","u":"${RPCTAP_UUID_9}","q":"say \"/work/x\""}`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	binds["${RPCTAP_CWD}"] = `C:\a "b"`
	if got := Fill([]byte(`{"cwd":"${RPCTAP_CWD}"}`), binds); !json.Valid(got) || string(got) != `{"cwd":"C:\\a \"b\""}` {
		t.Errorf("escaping: %s", got)
	}
}

func FuzzFrameStaysJSON(f *testing.F) {
	f.Add(`{"a":"/home/u/p/x","sessionId":"s1","t":"2026-01-01T00:00:00Z","processId":12}`)
	f.Add(`[1,"\u0041/home/u",{"k":"v\"/home/u"}]`)
	f.Add(`{"timestamp":-1e99,"pid":"x"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		n := NewNormalizer(Context{Cwd: "/home/u/p", Home: "/home/u", Tmp: "/tmp"})
		got, _ := n.Frame([]byte(s))
		if !json.Valid(got) {
			t.Fatalf("%s -> %s: not JSON", s, got)
		}
	})
}
