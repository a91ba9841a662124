package export

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/rpctap/rpctap/protocol"
)

// HTML writes a self-contained report: one file, no network (styles and
// script inline, no external URL), that any browser opens. It shows the
// exchanges as a list (time, direction, method, id, latency, summary), the
// selected exchange's request and response in a detail pane, and the
// session's transcript (protocol.Transcript: prompts, streamed text, tool
// calls).
//
// The list, the payloads and the transcript are data, not DOM: the page
// draws only the rows on screen, and decodes a payload when it is shown or
// searched. All are raw DEFLATE (RFC 1951) in script elements the browser
// does not run (type application/octet-stream), in a 7-bit text encoding
// (b122.go: 8 bytes in about 9.1 characters), inflated by the page's own
// script, synchronously, so that the first screen is drawn as the page
// loads:
//
//   - per 256 KiB of payloads, script.rows: the rows of the exchanges
//     written since the previous one, as a JSON object of columns
//     (htmlColumns), then script.pl: the JSON array of their
//     [request, response];
//   - script#tables: the kinds and methods the kind and method columns
//     index, and the number of rows (data-rows);
//   - script#transcript-data: the transcript's HTML, drawn when its tab is
//     opened.
//
// The writer holds one chunk of rows and payloads, the two tables and the
// transcript's folded text, so its memory does not grow with the cassette.
type HTML struct {
	w  *bufio.Writer
	s  Session
	n  int
	tr protocol.Transcript
	// folded counts the frame bytes fed to the transcript; past
	// transcriptLimit it stops (cut: at which record), so that memory
	// stays bounded for any cassette.
	folded int
	cut    uint64
	notes  []string // what was wrong with the cassette (Noter), shown under the title

	cols    [len(htmlColumns)]column // the rows of the chunk being filled
	methods map[string]int           // index in tables.methods
	kinds   map[string]int
	tables  struct{ Kinds, Methods []string }
	lastN   uint64
	lastT   int64
	chunk   []byte // the payload chunk being filled: JSON array elements
	inChunk int    // exchanges in chunk
	zbuf    bytes.Buffer
	z       *flate.Writer // compresses each payload chunk
	enc     []byte        // a block as text
}

// htmlColumns name the row columns: n and t as the difference from the
// previous row's, dir 0 (in) or 1 (out), kind and method as indexes in the
// kinds and methods tables, id, latency in ns (-1: no answer), summary,
// err 0 or 1, the answer's record number minus n (0: none), and why a
// request has no answer when that is known (Exchange.CutOff; "" else).
var htmlColumns = [...]string{"n", "t", "dir", "kind", "method", "id", "lat", "summary", "err", "rn", "cut"}

const (
	colN = iota
	colT
	colDir
	colKind
	colMethod
	colID
	colLat
	colSummary
	colErr
	colRN
	colCut
)

// column is one column of a chunk's rows: JSON array elements.
type column []byte

func (c *column) add(v []byte) {
	if len(*c) > 0 {
		*c = append(*c, ',')
	}
	*c = append(*c, v...)
}

func (c *column) addInt(v int64) {
	if len(*c) > 0 {
		*c = append(*c, ',')
	}
	*c = strconv.AppendInt(*c, v, 10)
}

func (c *column) addString(s string) {
	b, _ := json.Marshal(s) // escapes <, > and &
	c.add(b)
}

// Note keeps msg to show under the report's title.
func (h *HTML) Note(msg string) { h.notes = append(h.notes, msg) }

// transcriptLimit bounds the frames the report's transcript folds (its
// text is held until the end): 8 MiB, a long day of agent sessions.
const transcriptLimit = 8 << 20

// htmlChunk is the raw size past which a payload chunk is written.
const htmlChunk = 256 << 10

// NewHTML writes the report to w.
func NewHTML(w io.Writer) *HTML { return &HTML{w: bufio.NewWriterSize(w, 64<<10)} }

func (h *HTML) Begin(s Session) error {
	h.s = s
	h.tr.Protocol = s.Protocol
	var err error
	h.methods, h.kinds = map[string]int{}, map[string]int{}
	if h.z, err = flate.NewWriter(&h.zbuf, flate.DefaultCompression); err != nil {
		return err
	}
	title := html.EscapeString("rpctap: " + s.File)
	fmt.Fprintf(h.w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>%s</style></head>
<body>
<header><h1>%s</h1><p id="meta-line">%s · started %s</p>
<nav><button id="tab-list" class="on">Exchanges</button><button id="tab-transcript">Transcript</button>
<input id="filter" placeholder="filter: method or text" autocomplete="off"><span id="count"></span></nav></header>
<main id="list-view"><div id="list"><div class="row head"><span>#</span><span>time</span><span></span><span>method</span><span>id</span><span>latency</span><span>summary</span></div>
<div id="box"><div id="spacer"></div><div id="rows"></div></div></div>
<section id="detail"><p class="hint">Select an exchange to see its request and response.</p></section></main>
`, title, htmlCSS, html.EscapeString(s.File), html.EscapeString(orRaw(s.Protocol)), html.EscapeString(s.Created.UTC().Format("2006-01-02 15:04:05 MST")))
	return nil
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
	dir := protocol.DirOf(req.Dir)
	summary := protocol.Summarize(h.s.Protocol, dir, protocol.Info{Kind: protocol.Kind(req.Kind), Method: req.Method, ID: req.ID}, req.Payload)
	isErr := false
	resp := ""
	if r := x.Response; r != nil {
		resp = string(r.Payload)
		rdir := protocol.DirOf(r.Dir)
		if s := protocol.Summarize(h.s.Protocol, rdir, protocol.Info{Kind: protocol.Response, Method: req.Method, ID: r.ID}, r.Payload); s != "" {
			summary = strings.TrimSpace(summary + " → " + s)
		}
		_, _, isErr = errorOf(h.s.Protocol, x)
	}
	c := &h.cols
	c[colN].addInt(int64(req.Record) - int64(h.lastN))
	c[colT].addInt(req.T - h.lastT)
	h.lastN, h.lastT = req.Record, req.T
	c[colDir].addInt(map[bool]int64{true: 1}[req.Dir == "out"])
	c[colKind].addInt(int64(index(h.kinds, req.Kind, &h.tables.Kinds)))
	c[colMethod].addInt(int64(index(h.methods, req.Method, &h.tables.Methods)))
	c[colID].addString(req.ID)
	lat, rn := int64(-1), int64(0)
	if r := x.Response; r != nil {
		lat, rn = r.T-req.T, int64(r.Record)-int64(req.Record)
	}
	c[colLat].addInt(lat)
	c[colSummary].addString(summary)
	c[colErr].addInt(map[bool]int64{true: 1}[isErr])
	c[colRN].addInt(rn)
	c[colCut].addString(x.CutOff)
	h.n++
	p, err := json.Marshal([2]string{string(req.Payload), resp})
	if err != nil {
		return err
	}
	if h.inChunk > 0 {
		h.chunk = append(h.chunk, ',')
	}
	h.chunk = append(h.chunk, p...)
	h.inChunk++
	if len(h.chunk) >= htmlChunk {
		return h.flushChunk()
	}
	return nil
}

// flushChunk writes the payloads gathered so far as one script.pl.
func (h *HTML) flushChunk() error {
	if h.inChunk == 0 {
		return nil
	}
	h.zbuf.Reset()
	h.z.Reset(&h.zbuf)
	for i, c := range h.cols {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		fmt.Fprintf(h.z, `%s"%s":[`, sep, htmlColumns[i])
		h.z.Write(c)
		h.z.Write([]byte("]"))
		h.cols[i] = c[:0]
	}
	h.z.Write([]byte("}"))
	if err := h.z.Close(); err != nil {
		return err
	}
	h.script(`class="rows"`, h.zbuf.Bytes())
	h.zbuf.Reset()
	h.z.Reset(&h.zbuf)
	h.z.Write([]byte("["))
	h.z.Write(h.chunk)
	h.z.Write([]byte("]"))
	if err := h.z.Close(); err != nil {
		return err
	}
	h.script(`class="pl"`, h.zbuf.Bytes())
	h.chunk, h.inChunk = h.chunk[:0], 0
	return nil
}

// index is s's place in a table, added when new.
func index(m map[string]int, s string, table *[]string) int {
	i, ok := m[s]
	if !ok {
		i = len(m)
		m[s] = i
		*table = append(*table, s)
	}
	return i
}

// script writes data (raw DEFLATE) as a script element the browser does
// not run, with attrs, in the 7-bit encoding of b122.go.
func (h *HTML) script(attrs string, data []byte) {
	h.w.WriteString("<script " + attrs + ` type="application/octet-stream">`)
	h.enc = appendB122(h.enc[:0], data)
	h.w.Write(h.enc)
	h.w.WriteString("</script>\n")
}

func (h *HTML) End() error {
	if err := h.flushChunk(); err != nil {
		return err
	}
	tables, err := json.Marshal(h.tables)
	if err != nil {
		return err
	}
	h.zbuf.Reset()
	h.z.Reset(&h.zbuf)
	h.z.Write(tables)
	if err := h.z.Close(); err != nil {
		return err
	}
	h.script(fmt.Sprintf(`id="tables" data-rows="%d"`, h.n), h.zbuf.Bytes())
	if len(h.notes) > 0 {
		// Shown under the title (the header was written before the
		// cassette was read to its end).
		h.w.WriteString("<script id=\"notes\" type=\"application/json\">")
		b, _ := json.Marshal(h.notes) // escapes <, > and &
		h.w.Write(b)
		h.w.WriteString("</script>\n<script>JSON.parse(document.getElementById('notes').textContent).forEach(function(m){" +
			"var p=document.createElement('p');p.className='note';p.textContent='⚠ '+m;document.querySelector('header').insertBefore(p,document.querySelector('nav'))})</script>\n")
	}
	var tb bytes.Buffer
	h.transcript(&tb)
	h.zbuf.Reset()
	h.z.Reset(&h.zbuf)
	h.z.Write(tb.Bytes())
	if err := h.z.Close(); err != nil {
		return err
	}
	h.script(`id="transcript-data"`, h.zbuf.Bytes())
	h.w.WriteString("<main id=\"transcript-view\" hidden><section id=\"transcript\"></section></main>\n")
	h.w.WriteString("<script>" + htmlJS + "</script>\n</body></html>\n")
	return h.w.Flush()
}

// transcript writes the transcript's HTML.
func (h *HTML) transcript(w *bytes.Buffer) {
	if len(h.tr.Turns) == 0 {
		w.WriteString("<p class=\"hint\">No prompts or streamed answers in this session.</p>\n")
	}
	if h.cut != 0 {
		fmt.Fprintf(w, "<p class=\"hint\">The transcript stops at record #%d: it folds the first %d MiB of frames (rpctap view shows any part of a larger session).</p>\n", h.cut, transcriptLimit>>20)
	}
	for _, t := range h.tr.Turns {
		head := "Before the first prompt"
		if t.N > 0 {
			head = fmt.Sprintf("Turn %d · %s · #%d", t.N, t.Method, t.Rec)
			if t.Done >= 0 {
				head += fmt.Sprintf(" · took %s", fmtDur(t.Done))
			}
		}
		fmt.Fprintf(w, "<h2>%s</h2>\n", html.EscapeString(head))
		for _, e := range t.Entries {
			fmt.Fprintf(w, "<p class=\"e%d\" data-n=\"%d\">%s</p>\n", e.Kind, e.Rec, html.EscapeString(entryMark[e.Kind]+e.Text))
		}
	}
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
header{padding:8px 12px;border-bottom:1px solid var(--line);background:var(--bg)}
h1{font-size:15px;margin:0}.note{margin:2px 0;color:#b45309}#meta-line{margin:2px 0 6px;color:var(--dim)}
nav button{font:inherit;border:1px solid var(--line);background:#f9fafb;padding:2px 10px;cursor:pointer}
nav button.on{background:var(--sel)}#filter{font:inherit;margin-left:12px;padding:2px 6px;width:28em}#count{margin-left:8px;color:var(--dim)}
#list-view{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);height:calc(100vh - 84px)}
#list{display:flex;flex-direction:column;min-height:0}#box{flex:1;overflow:auto;position:relative;min-height:0}
#rows{position:absolute;left:0;right:0;top:0}
.row{display:grid;grid-template-columns:6em 7em 1.5em 16em 5em 6em minmax(0,1fr);height:19px;line-height:18px;border-bottom:1px solid var(--line);cursor:pointer;white-space:nowrap}
.row span{padding:0 6px;overflow:hidden;text-overflow:ellipsis}.row .r{text-align:right}
.row.head{background:#f3f4f6;font-weight:600;cursor:default}
.row.in .d,.row.in .m{color:var(--in)}.row.out .d,.row.out .m{color:var(--out)}.row.err span{color:var(--err)}.row.sel{background:var(--sel)}
#detail{overflow:auto;border-left:1px solid var(--line);padding:8px}#detail pre{white-space:pre-wrap;word-break:break-all;margin:4px 0 12px}
.hint{color:var(--dim)}#transcript{padding:8px 16px;max-width:60em}#transcript h2{font-size:14px;border-bottom:1px solid var(--line)}
.e0{}.e1{color:var(--dim);font-style:italic}.e2{color:var(--in);font-weight:600}.e3{color:#7c3aed}.e4{color:#c2410c}.e6{color:var(--err)}
`

// htmlJS is the page's script. inflate is raw DEFLATE (RFC 1951) with
// table lookup, synchronous so that the first screen is drawn before the
// page's load event. Rows are drawn RH pixels high, only those in view
// (plus a margin). The filter searches method, summary and payloads: one
// indexOf scan over the lower-cased text of each decoded chunk (all of
// them are, a few chunks a task, after the first screen; until then the
// rows of the others by method and summary); a query that extends the last
// one searches only the rows the last one kept, when they are few. #transcript opens the
// transcript's tab. #bench:QUERY in the URL decodes every chunk, types QUERY one
// key at a time and writes the time of each keystroke's filter into
// body[data-filter-ms] (TestHTMLLargeInChromium).
const htmlJS = `
(function(){
var t0=performance.now();
var LB=[3,4,5,6,7,8,9,10,11,13,15,17,19,23,27,31,35,43,51,59,67,83,99,115,131,163,195,227,258],
LE=[0,0,0,0,0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3,4,4,4,4,5,5,5,5,0],
DB=[1,2,3,4,5,7,9,13,17,25,33,49,65,97,129,193,257,385,513,769,1025,1537,2049,3073,4097,6145,8193,12289,16385,24577],
DE=[0,0,0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,7,8,8,9,9,10,10,11,11,12,12,13,13],
CLO=[16,17,18,0,8,7,9,6,10,5,11,4,12,3,13,2,14,1,15],fixedL=null,fixedD=null;
function table(lens,num){var max=0,i;for(i=0;i<num;i++)if(lens[i]>max)max=lens[i];
  var cnt=new Int32Array(16),next=new Int32Array(16),t=new Int32Array(1<<max),code=0;
  for(i=0;i<num;i++)cnt[lens[i]]++;cnt[0]=0;
  for(i=1;i<16;i++){code=(code+cnt[i-1])<<1;next[i]=code}
  for(i=0;i<num;i++){var L=lens[i];if(!L)continue;var c=next[L]++,r=0;for(var j=0;j<L;j++){r=(r<<1)|(c&1);c>>=1}
    for(var k=r;k<(1<<max);k+=1<<L)t[k]=(i<<4)|L}
  return {t:t,m:max,k:(1<<max)-1}}
function inflate(src){
  var n=src.length,out=new Uint8Array(Math.max(4096,n*5)),op=0,pos=0,bb=0,bc=0;
  function need(k){if(op+k>out.length){var o=new Uint8Array(Math.max(out.length*2,op+k));o.set(out.subarray(0,op));out=o}}
  function bits(k){while(bc<k){bb|=(pos<n?src[pos]:0)<<bc;pos++;bc+=8}var v=bb&((1<<k)-1);bb>>>=k;bc-=k;return v}
  function sym(h){while(bc<h.m){bb|=(pos<n?src[pos]:0)<<bc;pos++;bc+=8}var e=h.t[bb&h.k],L=e&15;if(!L)throw new Error('bad code');bb>>>=L;bc-=L;return e>>4}
  var fin;
  do{fin=bits(1);var type=bits(2),lt,dt,i;
    if(type===0){bits(bc&7);pos-=bc>>3;bb=0;bc=0;var len=src[pos]|(src[pos+1]<<8);pos+=4;need(len);out.set(src.subarray(pos,pos+len),op);op+=len;pos+=len;continue}
    if(type===1){if(!fixedL){var l=new Uint8Array(288);for(i=0;i<288;i++)l[i]=i<144?8:i<256?9:i<280?7:8;fixedL=table(l,288);var d=new Uint8Array(30);d.fill(5);fixedD=table(d,30)}lt=fixedL;dt=fixedD}
    else if(type===2){var hl=bits(5)+257,hd=bits(5)+1,hc=bits(4)+4,cl=new Uint8Array(19);
      for(i=0;i<hc;i++)cl[CLO[i]]=bits(3);var ct=table(cl,19),lens=new Uint8Array(hl+hd);
      for(i=0;i<hl+hd;){var s=sym(ct);if(s<16)lens[i++]=s;else{var rep,v=0;if(s===16){v=lens[i-1];rep=3+bits(2)}else if(s===17)rep=3+bits(3);else rep=11+bits(7);while(rep--)lens[i++]=v}}
      lt=table(lens.subarray(0,hl),hl);dt=table(lens.subarray(hl),hd)}
    else throw new Error('bad block');
    for(;;){var s=sym(lt);if(s<256){if(op>=out.length)need(1);out[op++]=s;continue}if(s===256)break;
      s-=257;var len=LB[s]+bits(LE[s]),dc=sym(dt),dist=DB[dc]+bits(DE[dc]);need(len);
      for(var k=0;k<len;k++,op++)out[op]=out[op-dist]}
  }while(!fin);
  return out.subarray(0,op)}
var utf8=new TextDecoder(),ILL=[0,13,60];
function b122(s){var n=s.length,out=new Uint8Array(Math.ceil(n*14/8)+2),o=0,acc=0,na=0,i,u;
  function push(v){acc=((acc<<7)|v)&0x7fff;na+=7;if(na>=8){na-=8;out[o++]=acc>>na}}
  for(i=0;i<n;i++){u=s.charCodeAt(i);if(u<128)push(u);else{var k=u>>7;if(k<=3){push(ILL[k-1]);push(u&127)}else push(ILL[k-4])}}
  return out.subarray(0,o)}
function unpack(el){return JSON.parse(utf8.decode(inflate(b122(el.textContent))))}
// rows[i]: [n, t, dir, kind, method, id, latency, summary, err, answer n, chunk, index in chunk, cut off]
var tables=unpack(document.getElementById('tables')),rows=[],n=0,t=0,i;
document.querySelectorAll('script.rows').forEach(function(el,c){var col=unpack(el);
  for(var x=0;x<col.n.length;x++){n+=col.n[x];t+=col.t[x];
    rows.push([n,t,col.dir[x]?'out':'in',tables.Kinds[col.kind[x]],tables.Methods[col.method[x]],col.id[x],col.lat[x],col.summary[x],col.err[x],col.rn[x]?n+col.rn[x]:0,c,x,col.cut[x]])}});
var N=rows.length;rows.sort(function(a,b){return a[0]-b[0]});
var chunkEls=document.querySelectorAll('script.pl'),chunkRow=[];
for(i=0;i<N;i++){var r=rows[i];(chunkRow[r[10]]||(chunkRow[r[10]]=[]))[r[11]]=i}
var box=document.getElementById('box'),spacer=document.getElementById('spacer'),rowsEl=document.getElementById('rows'),
  detail=document.getElementById('detail'),filterEl=document.getElementById('filter'),countEl=document.getElementById('count');
var RH=19,view=null,sel=-1,lastQ='';
function clock(ns){var ms=Math.floor(ns/1e6),m=Math.floor(ms/60000),s=Math.floor(ms/1000)%60,f=ms%1000;return m+':'+String(s).padStart(2,'0')+'.'+String(f).padStart(3,'0')}
function dur(ns){if(ns<0)return '';if(ns>=1e9)return (ns/1e9).toPrecision(3)+'s';if(ns>=1e6)return (ns/1e6).toPrecision(3)+'ms';if(ns>=1e3)return (ns/1e3).toPrecision(3)+'µs';return ns+'ns'}
function pretty(s){try{return JSON.stringify(JSON.parse(s),null,2)}catch(e){return s}}
function count(){return view?view.length:N}
function at(k){return view?view[k]:k}
function span(text,cls){var c=document.createElement('span');c.textContent=text;if(cls)c.className=cls;return c}
function draw(){
  var n=count();spacer.style.height=(n*RH)+'px';
  var first=Math.max(0,Math.floor(box.scrollTop/RH)-10),last=Math.min(n,Math.ceil((box.scrollTop+box.clientHeight)/RH)+10);
  if(box.clientHeight===0)last=Math.min(n,first+60);
  rowsEl.style.top=(first*RH)+'px';rowsEl.textContent='';
  for(var k=first;k<last;k++){var i=at(k),r=rows[i],d=document.createElement('div');
    d.className='row '+r[2]+(r[8]?' err':'')+(i===sel?' sel':'');d.dataset.i=i;
    [span(r[0],'r'),span(clock(r[1]),'r'),span(r[2]==='in'?'→':'←','d'),span(r[4]||r[3],'m'),span(r[5]),
     span(r[6]>=0?dur(r[6]):(r[12]?'cut off':(r[3]==='request'?'…':'')),'r'),span(r[7],'s')].forEach(function(c){d.appendChild(c)});
    rowsEl.appendChild(d)}
  document.body.dataset.rows=String(n);countEl.textContent=view?n+' of '+N:N+' exchanges'}
var pending=0;box.addEventListener('scroll',function(){if(!pending)pending=requestAnimationFrame(function(){pending=0;draw()})});
rowsEl.addEventListener('click',function(e){var d=e.target.closest('.row');if(d)show(Number(d.dataset.i))});
var cache={},cacheKeys=[];
function chunk(c){if(cache[c])return cache[c];var a=unpack(chunkEls[c]);cache[c]=a;cacheKeys.push(c);if(cacheKeys.length>8)delete cache[cacheKeys.shift()];return a}
function show(i){
  sel=i;var r=rows[i],p=chunk(r[10])[r[11]];detail.textContent='';
  function part(title,body){var h=document.createElement('h3');h.textContent=title;var pre=document.createElement('pre');pre.textContent=pretty(body);detail.appendChild(h);detail.appendChild(pre)}
  part('#'+r[0]+' '+(r[2]==='in'?'parent → child':'child → parent')+' '+r[3]+' '+(r[4]||''),p[0]);
  if(p[1]!=='')part('#'+r[9]+' response after '+dur(r[6]),p[1]);
  else if(r[3]==='request')detail.appendChild(Object.assign(document.createElement('p'),{className:'hint',textContent:r[12]?'no response: '+r[12]:'no response recorded'}));
  draw()}
// Search texts, lower-cased: one for every row's method and summary; one
// per decoded chunk for its rows' method, summary and payloads. starts[]
// are where each row's text begins.
var metaText=null,metaStarts=null,chunkText=[],chunkStarts=[],decoded=0;
function index(parts){var starts=new Int32Array(parts.length+1),o=0;for(var k=0;k<parts.length;k++){starts[k]=o;o+=parts[k].length+1}starts[parts.length]=o;return {text:parts.join('\u0000').toLowerCase(),starts:starts}}
function metaIndex(){if(metaText)return;var parts=new Array(N);for(var k=0;k<N;k++)parts[k]=(rows[k][4]||rows[k][3])+' '+rows[k][7];var x=index(parts);metaText=x.text;metaStarts=x.starts}
function decodeChunk(c){var a=unpack(chunkEls[c]),parts=new Array(a.length),m=chunkRow[c];
  for(var k=0;k<a.length;k++){var r=rows[m[k]];parts[k]=(r[4]||r[3])+' '+r[7]+'\u0001'+a[k][0]+'\u0001'+a[k][1]}
  var x=index(parts);chunkText[c]=x.text;chunkStarts[c]=x.starts;decoded++}
function scan(text,starts,q,hit,map){var at=text.indexOf(q),k=0;
  while(at>=0){while(starts[k+1]<=at)k++;hit[map?map[k]:k]=1;at=text.indexOf(q,starts[k+1])}}
function matches(i,q){var r=rows[i],s=chunkStarts[r[10]];return chunkText[r[10]].substring(s[r[11]],s[r[11]+1]).indexOf(q)>=0}
function filter(q){
  q=q.toLowerCase();
  if(!q){view=null;lastQ='';draw();return}
  var out=[];
  if(view&&lastQ&&q.indexOf(lastQ)===0&&lastComplete&&view.length<N/4){for(var k=0;k<view.length;k++)if(matches(view[k],q))out.push(view[k])}
  else{var hit=new Uint8Array(N);if(decoded<chunkEls.length){metaIndex();scan(metaText,metaStarts,q,hit,null)}
    for(var c=0;c<chunkText.length;c++)if(chunkText[c]!==undefined)scan(chunkText[c],chunkStarts[c],q,hit,chunkRow[c]);
    for(var k=0;k<N;k++)if(hit[k])out.push(k)}
  view=out;lastQ=q;lastComplete=decoded===chunkEls.length;box.scrollTop=0;draw()}
var lastComplete=false;
filterEl.oninput=function(e){filter(e.target.value)};
var tv=document.getElementById('transcript');
function tab(name){if(name==='transcript'&&!tv.firstChild)tv.innerHTML=utf8.decode(inflate(b122(document.getElementById('transcript-data').textContent)));
  document.getElementById('list-view').hidden=name!=='list';document.getElementById('transcript-view').hidden=name!=='transcript';
  document.getElementById('tab-list').className=name==='list'?'on':'';document.getElementById('tab-transcript').className=name==='transcript'?'on':'';if(name==='list')draw()}
document.getElementById('tab-list').onclick=function(){tab('list')};document.getElementById('tab-transcript').onclick=function(){tab('transcript')};
if(N>0)show(0);else draw();
document.body.dataset.firstScreenMs=String(Math.round(performance.now()));
document.body.dataset.scriptMs=String(Math.round(performance.now()-t0));
// Payloads are searched once decoded: a few chunks a task after the first
// screen, then the filter runs again if one is set.
var bench=/^#bench:(.*)$/.exec(location.hash);
if(bench){var b0=performance.now();metaIndex();while(decoded<chunkEls.length)decodeChunk(decoded);
  document.body.dataset.indexMs=String(Math.round(performance.now()-b0));
  var q=decodeURIComponent(bench[1]),ms=[];
  for(var k=1;k<=q.length;k++){filterEl.value=q.slice(0,k);var f0=performance.now();filter(filterEl.value);ms.push(Math.round((performance.now()-f0)*10)/10)}
  document.body.dataset.filterMs=ms.join(',');}
else if(/^#transcript$/.test(location.hash))tab('transcript');
else{(function more(){var end=Math.min(chunkEls.length,decoded+4);while(decoded<end)decodeChunk(decoded);
  if(decoded<chunkEls.length)setTimeout(more,0);else if(filterEl.value)filter(filterEl.value)})()}
})();
`
