package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/rpctap/rpctap/protocol"
)

// HTML writes a self-contained report: one file, no network (styles and
// script inline, no external URL), that any browser opens. It shows the
// exchanges as a list (time, direction, method, id, latency, summary), the
// selected exchange's request and response in a detail pane, and the
// session's transcript (protocol.Transcript: prompts, streamed text, tool
// calls). Exchanges are streamed into a JSON data block as they come, so
// the writer holds only the transcript's folded text; the page renders the
// list from the data block when it loads.
type HTML struct {
	w     *bufio.Writer
	s     Session
	n     int
	tr    protocol.Transcript
	first bool
	// folded counts the frame bytes fed to the transcript; past
	// transcriptLimit it stops (cut: at which record), so that memory
	// stays bounded for any cassette.
	folded int
	cut    uint64
	notes  []string // what was wrong with the cassette (Noter), shown under the title
}

// Note keeps msg to show under the report's title.
func (h *HTML) Note(msg string) { h.notes = append(h.notes, msg) }

// transcriptLimit bounds the frames the report's transcript folds (its
// text is held until the end): 8 MiB, a long day of agent sessions.
const transcriptLimit = 8 << 20

// NewHTML writes the report to w.
func NewHTML(w io.Writer) *HTML { return &HTML{w: bufio.NewWriterSize(w, 64<<10), first: true} }

// htmlRow is one exchange in the page's data block.
type htmlRow struct {
	N        uint64 `json:"n"`
	T        int64  `json:"t"`
	Dir      string `json:"d"`
	Kind     string `json:"k"`
	Method   string `json:"m"`
	ID       string `json:"id,omitempty"`
	Latency  int64  `json:"lat"` // ns; -1 without an answer
	Summary  string `json:"s,omitempty"`
	Error    bool   `json:"err,omitempty"`
	Request  string `json:"req"`
	Response string `json:"resp,omitempty"`
	RespN    uint64 `json:"rn,omitempty"`
	Cut      string `json:"cut,omitempty"` // why no answer can be told from a missing one (Exchange.CutOff)
}

func (h *HTML) Begin(s Session) error {
	h.s = s
	h.tr.Protocol = s.Protocol
	title := html.EscapeString("rpctap: " + s.File)
	fmt.Fprintf(h.w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>%s</style></head>
<body>
<header><h1>%s</h1><p id="meta">%s · started %s</p>
<nav><button id="tab-list" class="on">Exchanges</button><button id="tab-transcript">Transcript</button>
<input id="filter" placeholder="filter: method or text" autocomplete="off"></nav></header>
<main id="list-view"><table id="list"><thead><tr><th>#</th><th>time</th><th></th><th>method</th><th>id</th><th>latency</th><th>summary</th></tr></thead><tbody></tbody></table>
<section id="detail"><p class="hint">Select an exchange to see its request and response.</p></section></main>
`, title, htmlCSS, html.EscapeString(s.File), html.EscapeString(orRaw(s.Protocol)), html.EscapeString(s.Created.UTC().Format("2006-01-02 15:04:05 MST")))
	_, err := io.WriteString(h.w, `<script id="data" type="application/json">[`+"\n")
	return err
}

// Request feeds the transcript as a request is read (RequestWatcher), so
// that a prompt comes before what streamed its answer.
func (h *HTML) Request(f *Frame) { h.fold(f) }

func (h *HTML) fold(f *Frame) {
	if h.cut != 0 {
		return
	}
	if h.folded += len(f.Payload); h.folded > transcriptLimit {
		h.cut = f.Record
		return
	}
	dir := protocol.DirOf(f.Dir)
	if len(f.Payload) > 0 && (f.Payload[0] == '{' || f.Payload[0] == '[') {
		h.tr.Add(protocol.TranscriptFrame{N: f.Record, T: f.T, Dir: dir, JSON: f.Payload})
	}
}

func (h *HTML) Exchange(x *Exchange) error {
	req := x.Request
	if x.Response != nil {
		h.fold(x.Response)
	} else if req.Kind != "request" {
		h.fold(req)
	}
	row := htmlRow{N: req.Record, T: req.T, Dir: req.Dir, Kind: req.Kind, Method: req.Method, ID: req.ID, Latency: -1,
		Request: string(req.Payload), Cut: x.CutOff}
	dir := protocol.DirOf(req.Dir)
	row.Summary = protocol.Summarize(h.s.Protocol, dir, protocol.Info{Kind: protocol.Kind(req.Kind), Method: req.Method, ID: req.ID}, req.Payload)
	if r := x.Response; r != nil {
		row.Latency, row.Response, row.RespN = r.T-req.T, string(r.Payload), r.Record
		rdir := protocol.DirOf(r.Dir)
		if s := protocol.Summarize(h.s.Protocol, rdir, protocol.Info{Kind: protocol.Response, Method: req.Method, ID: r.ID}, r.Payload); s != "" {
			row.Summary = strings.TrimSpace(row.Summary + " → " + s)
		}
		_, _, row.Error = errorOf(h.s.Protocol, x)
	}
	b, err := json.Marshal(row) // escapes <, > and & : safe inside <script>
	if err != nil {
		return err
	}
	if !h.first {
		h.w.WriteString(",\n")
	}
	h.first = false
	h.n++
	_, err = h.w.Write(b)
	return err
}

func (h *HTML) End() error {
	h.w.WriteString("\n]</script>\n")
	if len(h.notes) > 0 {
		// Shown under the title (the header was written before the
		// cassette was read to its end).
		h.w.WriteString("<script id=\"notes\" type=\"application/json\">")
		b, _ := json.Marshal(h.notes) // escapes <, > and &
		h.w.Write(b)
		h.w.WriteString("</script>\n<script>JSON.parse(document.getElementById('notes').textContent).forEach(function(m){" +
			"var p=document.createElement('p');p.className='note';p.textContent='⚠ '+m;document.querySelector('header').insertBefore(p,document.querySelector('nav'))})</script>\n")
	}
	h.w.WriteString("<main id=\"transcript-view\" hidden><section id=\"transcript\">\n")
	if len(h.tr.Turns) == 0 {
		h.w.WriteString("<p class=\"hint\">No prompts or streamed answers in this session.</p>\n")
	}
	if h.cut != 0 {
		fmt.Fprintf(h.w, "<p class=\"hint\">The transcript stops at record #%d: it folds the first %d MiB of frames (rpctap view shows any part of a larger session).</p>\n", h.cut, transcriptLimit>>20)
	}
	for _, t := range h.tr.Turns {
		head := "Before the first prompt"
		if t.N > 0 {
			head = fmt.Sprintf("Turn %d · %s · #%d", t.N, t.Method, t.Rec)
			if t.Done >= 0 {
				head += fmt.Sprintf(" · took %s", fmtDur(t.Done))
			}
		}
		fmt.Fprintf(h.w, "<h2>%s</h2>\n", html.EscapeString(head))
		for _, e := range t.Entries {
			fmt.Fprintf(h.w, "<p class=\"e%d\" data-n=\"%d\">%s</p>\n", e.Kind, e.Rec, html.EscapeString(entryMark[e.Kind]+e.Text))
		}
	}
	h.w.WriteString("</section></main>\n<script>" + htmlJS + "</script>\n</body></html>\n")
	return h.w.Flush()
}

// entryMark is the mark before a transcript entry, as the viewer shows it.
var entryMark = map[protocol.EntryKind]string{
	protocol.EntryUser: "> ", protocol.EntryThought: "(thinking) ", protocol.EntryTool: "⚙ ",
	protocol.EntryPermission: "? ", protocol.EntryProgress: "· ", protocol.EntryPlan: "☰ ", protocol.EntryNote: "! ",
}

// fmtDur formats ns as the viewer does (3 significant digits and a unit).
func fmtDur(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3gs", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3gms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3gµs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%dns", ns)
}

const htmlCSS = `
:root{--bg:#fff;--fg:#1d2125;--dim:#6b7280;--line:#e5e7eb;--in:#0f766e;--out:#15803d;--err:#b91c1c;--sel:#dbeafe}
[hidden]{display:none!important}*{box-sizing:border-box}body{margin:0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--fg);background:var(--bg)}
header{padding:8px 12px;border-bottom:1px solid var(--line);position:sticky;top:0;background:var(--bg)}
h1{font-size:15px;margin:0}.note{margin:2px 0;color:#b45309}#meta{margin:2px 0 6px;color:var(--dim)}
nav button{font:inherit;border:1px solid var(--line);background:#f9fafb;padding:2px 10px;cursor:pointer}
nav button.on{background:var(--sel)}#filter{font:inherit;margin-left:12px;padding:2px 6px;width:28em}
#list-view{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);height:calc(100vh - 84px)}
#list-view>table{display:block;overflow:auto}table{border-collapse:collapse;width:100%}
th{position:sticky;top:0;background:#f3f4f6;text-align:left;font-weight:600}
td,th{padding:1px 6px;white-space:nowrap;border-bottom:1px solid var(--line)}
td.r{text-align:right}td.s{max-width:40em;overflow:hidden;text-overflow:ellipsis}
tr.in td.d,tr.in td.m{color:var(--in)}tr.out td.d,tr.out td.m{color:var(--out)}tr.err td{color:var(--err)}
tbody tr{cursor:pointer}tbody tr.sel{background:var(--sel)}
#detail{overflow:auto;border-left:1px solid var(--line);padding:8px}#detail pre{white-space:pre-wrap;word-break:break-all;margin:4px 0 12px}
.hint{color:var(--dim)}#transcript{padding:8px 16px;max-width:60em}#transcript h2{font-size:14px;border-bottom:1px solid var(--line)}
.e0{}.e1{color:var(--dim);font-style:italic}.e2{color:var(--in);font-weight:600}.e3{color:#7c3aed}.e4{color:#c2410c}.e6{color:var(--err)}
`

const htmlJS = `
(function(){
var rows=JSON.parse(document.getElementById('data').textContent);
rows.sort(function(a,b){return a.n-b.n});
var tbody=document.querySelector('#list tbody'),detail=document.getElementById('detail');
function clock(ns){var ms=Math.floor(ns/1e6),m=Math.floor(ms/60000),s=Math.floor(ms/1000)%60,f=ms%1000;return m+':'+String(s).padStart(2,'0')+'.'+String(f).padStart(3,'0')}
function dur(ns){if(ns<0)return '';if(ns>=1e9)return (ns/1e9).toPrecision(3)+'s';if(ns>=1e6)return (ns/1e6).toPrecision(3)+'ms';if(ns>=1e3)return (ns/1e3).toPrecision(3)+'µs';return ns+'ns'}
function pretty(s){try{return JSON.stringify(JSON.parse(s),null,2)}catch(e){return s}}
function td(text,cls){var c=document.createElement('td');c.textContent=text;if(cls)c.className=cls;return c}
function render(q){
  tbody.textContent='';q=(q||'').toLowerCase();
  rows.forEach(function(r,i){
    if(q&&(r.m+' '+r.s+' '+r.req+' '+(r.resp||'')).toLowerCase().indexOf(q)<0)return;
    var tr=document.createElement('tr');tr.className=r.d+(r.err?' err':'');tr.dataset.i=i;
    [td(r.n,'r'),td(clock(r.t),'r'),td(r.d==='in'?'→':'←','d'),td(r.m||r.k,'m'),td(r.id||''),
     td(r.lat>=0?dur(r.lat):(r.cut?'cut off':(r.k==='request'?'…':'')),'r'),td(r.s||'','s')].forEach(function(c){tr.appendChild(c)});
    tr.onclick=function(){show(i,tr)};tbody.appendChild(tr);
  });
}
function show(i,tr){
  var r=rows[i];document.querySelectorAll('tr.sel').forEach(function(x){x.classList.remove('sel')});tr.classList.add('sel');
  detail.textContent='';
  function part(title,body){var h=document.createElement('h3');h.textContent=title;var p=document.createElement('pre');p.textContent=pretty(body);detail.appendChild(h);detail.appendChild(p)}
  part('#'+r.n+' '+(r.d==='in'?'parent → child':'child → parent')+' '+r.k+' '+(r.m||''),r.req);
  if(r.resp!==undefined&&r.resp!=='')part('#'+r.rn+' response after '+dur(r.lat),r.resp);
  else if(r.k==='request')detail.appendChild(Object.assign(document.createElement('p'),{className:'hint',textContent:r.cut?'no response: '+r.cut:'no response recorded'}));
}
document.getElementById('filter').oninput=function(e){render(e.target.value)};
function tab(name){document.getElementById('list-view').hidden=name!=='list';document.getElementById('transcript-view').hidden=name!=='transcript';
  document.getElementById('tab-list').className=name==='list'?'on':'';document.getElementById('tab-transcript').className=name==='transcript'?'on':''}
document.getElementById('tab-list').onclick=function(){tab('list')};document.getElementById('tab-transcript').onclick=function(){tab('transcript')};
render('');
document.body.dataset.rows=String(tbody.children.length);
var first=tbody.querySelector('tr');if(first)show(Number(first.dataset.i),first);
})();
`
